// The CUDA plan of every zoo model, built without a device: every generated kernel compiles
// for sm_90 with NVRTC + nvJitLink with zero spills, register counts are reported, library
// anchors cover the convolutions and GEMMs, and the register-aware vertical strategy splits a
// chain whose measured registers exceed the budget. Device tests ("device.zoo") compare CUDA
// with the CPU backend on every model and skip without a GPU.
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "graph/loader/model_loader.h"
#include "runtime/session.h"
#include "tests/cuda/cuda_test_models.h"

using namespace fusert;

namespace {

const std::string kModels = std::string(FUSERT_SOURCE_DIR) + "/models/";
const std::vector<std::string> kZoo = {"resnet18",           "resnet50",        "mobilenet_v2",
                                       "efficientnet_lite0", "bert_base_layer", "minilm_l6",
                                       "transformer_block",  "multitask_heads", "branch_merge"};

SessionOptions cuda_options(const std::string& fusion, bool plan_only) {
  SessionOptions o;
  o.device = "cuda";
  o.fusion = fusion;
  o.seeded = true;
  o.plan_only = plan_only;
  return o;
}

bool have_device() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

}  // namespace

TEST_CASE("codegen.zoo: every generated kernel of every zoo model compiles for sm_90 without spills") {
  for (const std::string& m : kZoo) {
    for (const char* fusion : {"all", "none"}) {
      CAPTURE(m);
      CAPTURE(fusion);
      auto s = Session::load(kModels + m + ".yaml", cuda_options(fusion, true));
      REQUIRE_MESSAGE(s.ok(), s.status().to_string());
      const SessionStats& st = (*s)->stats();
      CHECK(st.generated_kernels > 0);
      const std::string report = (*s)->backend_report();
      CHECK(report.find("cuda plan (sm_90)") != std::string::npos);
      CHECK(report.find("spill bytes]") != std::string::npos);
      // Zero spills everywhere: the report lists "[N regs, S spill bytes]" per kernel.
      for (size_t at = report.find(" regs, "); at != std::string::npos; at = report.find(" regs, ", at + 1)) {
        CHECK(report.compare(at + 7, 14, "0 spill bytes]") == 0);
      }
      if (m != "branch_merge" || std::string(fusion) == "none") CHECK(st.host_fallback_steps == 0);
      CHECK(st.library_calls > 0);
      if (std::string(fusion) == "all") {
        int measured = 0;
        for (const FusionGroup& g : (*s)->fusion_plan().groups) {
          if (g.registers_measured < 0) continue;
          ++measured;
          CHECK(g.spill_bytes == 0);
          CHECK(g.registers_measured > 0);
          CHECK(g.registers_measured <= 255);
        }
        MESSAGE(m << ": " << st.generated_kernels << " generated kernels, " << st.library_calls << " library calls, "
                  << measured << " fused groups with measured registers, host fallback " << st.host_fallback_steps);
      }
    }
  }
}

TEST_CASE("codegen.register_budget: a chain above the measured budget is split; within it, fused") {
  const std::string yaml = kModels + "../tests/cuda/data/gelu_chain.yaml";
  auto fused = Session::load(yaml, cuda_options("vertical", true));
  REQUIRE_MESSAGE(fused.ok(), fused.status().to_string());
  auto tight = cuda_options("vertical", true);
  tight.register_budget = 8;  // below any real kernel's count
  auto split = Session::load(yaml, tight);
  REQUIRE_MESSAGE(split.ok(), split.status().to_string());
  CHECK(fused->get()->stats().kernels < split->get()->stats().kernels);
  bool measured_refusal = false;
  for (const Rejection& r : split->get()->fusion_plan().rejected) {
    if (r.key == "register_pressure" && r.reason.find("measured, nvJitLink sm_90") != std::string::npos &&
        r.reason.find("> budget 8 registers") != std::string::npos) {
      measured_refusal = true;
    }
  }
  CHECK(measured_refusal);
  for (const Rejection& r : fused->get()->fusion_plan().rejected) CHECK(r.key != "register_pressure");
}

TEST_CASE("codegen.no_device: without a device, attaching fails with a clear error after planning") {
  if (have_device()) {
    MESSAGE("skipped: a CUDA device is present");
    return;
  }
  auto s = Session::load(kModels + "resnet18.yaml", cuda_options("all", true));
  REQUIRE(s.ok());
  Status st = (*s)->init_device();
  CHECK(st.code() == StatusCode::kDeviceError);
  CHECK(st.message().find("--device cuda") != std::string::npos);
  auto full = Session::load(kModels + "resnet18.yaml", cuda_options("all", false));
  CHECK(!full.ok());
}

TEST_CASE("device.zoo: CUDA matches the CPU backend on every zoo model (fusion none and all)") {
  if (!have_device()) {
    MESSAGE("skipped: no CUDA device");
    return;
  }
  for (const std::string& m : kZoo) {
    for (const char* fusion : {"none", "all"}) {
      CAPTURE(m);
      CAPTURE(fusion);
      auto gpu = Session::load(kModels + m + ".yaml", cuda_options(fusion, false));
      REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
      SessionOptions co;
      co.fusion = fusion;
      co.seeded = true;
      auto cpu = Session::load(kModels + m + ".yaml", co);
      REQUIRE(cpu.ok());
      TensorMap in = (*cpu)->seeded_inputs(7);
      auto want = (*cpu)->run(in);
      REQUIRE(want.ok());
      for (int rep = 0; rep < 2; ++rep) {  // the second run replays the CUDA Graph
        auto got = (*gpu)->run(in);
        REQUIRE_MESSAGE(got.ok(), got.status().to_string());
        for (const auto& [name, t] : *want) {
          if (t.dtype() != DType::kF32) continue;
          const Tensor& g = got->at(name);
          double num = 0, den = 0;
          for (int64_t i = 0; i < t.numel(); ++i) {
            double d = static_cast<double>(g.f32()[i]) - t.f32()[i];
            num += d * d;
            den += static_cast<double>(t.f32()[i]) * t.f32()[i];
          }
          CHECK(std::sqrt(num / den) <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("codegen.multi_anchor: horizontal convs, grouped GEMMs and grouped LayerNorms lower to CUDA") {
  const std::string path = cudatest::write_yaml("fusert-test-", "multi_anchor", cudatest::kMultiAnchor);
  auto s = Session::load(path, cuda_options("all", true));
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  std::set<GroupKind> kinds;
  for (const FusionGroup& g : (*s)->fusion_plan().groups) kinds.insert(g.kind);
  CHECK(kinds.count(GroupKind::kHorizontalGemm) == 1);
  CHECK(kinds.count(GroupKind::kGroupedGemm) == 1);
  CHECK(kinds.count(GroupKind::kGroupedRowNorm) == 1);
  CHECK((*s)->stats().host_fallback_steps == 0);
  const std::string report = (*s)->backend_report();
  CHECK(report.find("host fallback") == std::string::npos);
  if (have_device()) {
    auto gpu = Session::load(path, cuda_options("all", false));
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
    SessionOptions co;
    co.seeded = true;
    co.fusion = "none";
    auto cpu = Session::load(path, co);
    REQUIRE(cpu.ok());
    TensorMap in = (*cpu)->seeded_inputs(3);
    auto want = (*cpu)->run(in);
    auto got = (*gpu)->run(in);
    REQUIRE(got.ok());
    for (const auto& [name, t] : *want) {
      double num = 0, den = 0;
      for (int64_t i = 0; i < t.numel(); ++i) {
        double d = static_cast<double>(got->at(name).f32()[i]) - t.f32()[i];
        num += d * d;
        den += static_cast<double>(t.f32()[i]) * t.f32()[i];
      }
      CHECK(std::sqrt(num / den) <= 1e-5);
    }
  }
  std::remove(path.c_str());
}

TEST_CASE("codegen.operand_limit: a chain needing more than 8 operands is split, never a failed plan") {
  const std::string path = cudatest::write_yaml("fusert-test-", "long_chain", cudatest::long_chain_yaml());
  auto opt = cuda_options("all", true);
  opt.register_budget = 255;
  auto s = Session::load(path, opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK((*s)->stats().host_fallback_steps == 0);
  CHECK((*s)->stats().kernels == 2);  // 7 + 3 ops: the 8-operand kernel limit splits the chain once
  bool refused = false;
  for (const Rejection& r : (*s)->fusion_plan().rejected)
    refused |= r.key == "backend" &&
               r.reason.find("cuda cannot run this elementwise group as one launch: 9 operands of rank 2 (limits 8") !=
                   std::string::npos;
  CHECK(refused);
  std::remove(path.c_str());
}
