// The CUDA backend end to end on the CPU: every zoo model (and the multi-anchor and long-chain
// graphs of tests/cuda/test_cuda_plan.cc), fusion none and all, through the real lowering,
// executor, kernel ABI and cuDNN/cuBLASLt/CUDA-runtime calls, linked against the emulation in
// tests/cuda_emu (generated kernels run as their host references). Compared with the CPU
// backend: rel L2 <= 1e-5 on every f32 output (other dtypes exactly) on three runs: eager,
// the run that captures the CUDA Graph, and a replay; the three must also agree bit for bit.
// The emulation's own checks (allocation bounds, guard bytes, capture rules, argument structs,
// alignment) must report nothing. Exact fp32 only (tf32 off): TF32 rounding is not emulated.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "graph/fusion/explain.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "runtime/session.h"
#include "tests/cuda/cuda_test_models.h"
#include "tests/cuda_emu/emu.h"

using namespace fusert;

namespace {

const std::string kModels = std::string(FUSERT_SOURCE_DIR) + "/models/";

double rel_l2(const Tensor& got, const Tensor& want, bool* finite) {
  double num = 0, den = 0;
  *finite = true;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.f32()[i], w = want.f32()[i];
    if (!std::isfinite(g)) *finite = false;
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Loads `path` on the emulated CUDA device and on the CPU with the same fusion and seeded
// weights, runs both on the same seeded inputs and compares three CUDA runs with the CPU.
void compare_with_cpu(const std::string& path, const std::string& fusion, const std::string& label) {
  CAPTURE(label);
  CAPTURE(fusion);
  SessionOptions co;
  co.fusion = fusion;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  const TensorMap in = (*cpu)->seeded_inputs(7);
  auto want = (*cpu)->run(in);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());

  emu::clear_violations();
  emu::reset_counters();
  SessionOptions go = co;
  go.device = "cuda";
  go.tf32 = false;
  go.cuda_graph = true;
  auto gpu = Session::load(path, go);
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
  const SessionStats& st = (*gpu)->stats();
  CHECK(st.device_name.find("fusert CUDA emulator") != std::string::npos);
  const bool graphs = st.host_fallback_steps == 0;

  std::vector<TensorMap> runs;
  double worst = 0;
  int64_t kernels_per_run = 0, library_per_run = 0, copies_per_run = 0;
  for (int rep = 0; rep < 3; ++rep) {
    CAPTURE(rep);
    const emu::Counters before = emu::counters();
    auto got = (*gpu)->run(in);
    REQUIRE_MESSAGE(got.ok(), got.status().to_string());
    const emu::Counters after = emu::counters();
    // Run 1 is eager; run 2 captures the CUDA Graph and launches it; run 3 replays it.
    CHECK(st.cuda_graph == (graphs && rep > 0));
    kernels_per_run = after.kernel_launches - before.kernel_launches;
    library_per_run = after.library_calls - before.library_calls;
    copies_per_run = after.copy_ops - before.copy_ops;
    CHECK_MESSAGE(library_per_run == st.library_calls,
                  "cuDNN/cuBLASLt calls run: " << library_per_run << ", the plan counts " << st.library_calls);
    for (const auto& [name, t] : *want) {
      CAPTURE(name);
      auto it = got->find(name);
      REQUIRE(it != got->end());
      REQUIRE(it->second.dtype() == t.dtype());
      REQUIRE(it->second.shape() == t.shape());
      if (t.dtype() != DType::kF32) {
        CHECK(same_bits(it->second, t));
        continue;
      }
      bool finite = true;
      const double rel = rel_l2(it->second, t, &finite);
      worst = std::max(worst, rel);
      CHECK(finite);
      CHECK_MESSAGE(rel <= 1e-5, "rel L2 " << rel);
    }
    runs.push_back(std::move(*got));
  }
  for (const auto& [name, t] : runs[0]) {
    CAPTURE(name);
    CHECK_MESSAGE(same_bits(runs[1].at(name), t), "the captured run differs from the eager run");
    CHECK_MESSAGE(same_bits(runs[2].at(name), t), "the graph replay differs from the eager run");
  }
  const emu::Counters total = emu::counters();
  CHECK(total.graph_launches == (graphs ? 2 : 0));
  if (graphs) CHECK(total.captured_ops > 0);
  const std::vector<std::string> v = emu::violations();
  std::ostringstream vs;
  for (size_t i = 0; i < v.size() && i < 20; ++i) vs << "\n  " << v[i];
  CHECK_MESSAGE(v.empty(), v.size() << " emulation violations:" << vs.str());
  const std::string report = (*gpu)->backend_report();
  MESSAGE(label << " [fusion " << fusion << "]: " << report.substr(0, report.find('\n')));
  MESSAGE(label << " [fusion " << fusion << "]: " << st.kernels << " kernels, " << st.generated_kernels
                << " generated kernels, " << st.library_calls << " library calls, " << st.host_fallback_steps
                << " host fallbacks; per run: " << kernels_per_run << " generated launches, " << library_per_run
                << " library calls, " << copies_per_run << " copies; CUDA Graph " << std::string(graphs ? "yes" : "no")
                << "; worst rel L2 " << worst);
}

void zoo_model(const std::string& model) {
  for (const char* fusion : {"none", "all"}) compare_with_cpu(kModels + model + ".yaml", fusion, model);
}

// Trilu and a ReduceMax over non-adjacent axes have no CUDA kernel (Slice, Split, Expand, Tile and
// Pad run on the device; a reduction over adjacent axes on reduce.cuh):
// host-fallback steps between device steps (no CUDA Graph then), reading a device result and a
// Reshape alias of it.
const char* kHostFallback = R"(fusert: 1
name: host_fallback
inputs: [{name: x, shape: [2, 8, 6]}]
outputs: [y, z, v]
initializers:
  - {name: w, shape: [8, 6]}
  - {name: w2, shape: [2, 8, 6]}
  - {name: w3, shape: [2, 1, 6]}
  - {name: flat, shape: [2], dtype: i64, value: [16, 6]}
nodes:
  - {name: a, op: Add, inputs: [x, w], outputs: [xa]}
  - {name: r, op: Relu, inputs: [xa], outputs: [xr]}
  - {name: s, op: Trilu, inputs: [xr], outputs: [xs]}
  - {name: m, op: Mul, inputs: [xs, w2], outputs: [y]}
  - {name: sp, op: ReduceMax, inputs: [xr], outputs: [p], attrs: {axes: [0, 2], keepdims: 1}}
  - {name: d, op: Sub, inputs: [p, w3], outputs: [pq]}
  - {name: t, op: Tanh, inputs: [pq], outputs: [z]}
  - {name: rs, op: Reshape, inputs: [xr, flat], outputs: [xf]}
  - {name: sg, op: Sigmoid, inputs: [xf], outputs: [v]}
)";

// GEMM anchors with every cuBLASLt epilogue fusert asks for: Gemm + bias + ReLU, a MatMul by a
// weight + bias + tanh-GELU, a batched MatMul of two activations + a bias (no activation).
const char* kGemmEpilogues = R"(fusert: 1
name: gemm_epilogues
inputs: [{name: x, shape: [6, 13]}, {name: s, shape: [2, 3, 13]}, {name: t, shape: [2, 13, 5]}]
outputs: [y1, y2, y3]
initializers:
  - {name: w1, shape: [13, 7]}
  - {name: b1, shape: [7]}
  - {name: w2, shape: [13, 5]}
  - {name: b2, shape: [5]}
nodes:
  - {name: g1, op: Gemm, inputs: [x, w1, b1], outputs: [g1o]}
  - {name: r1, op: Relu, inputs: [g1o], outputs: [y1]}
  - {name: m2, op: MatMul, inputs: [s, w2], outputs: [m2o]}
  - {name: a2, op: Add, inputs: [m2o, b2], outputs: [a2o]}
  - {name: e2, op: Gelu, inputs: [a2o], outputs: [y2], attrs: {approximate: tanh}}
  - {name: m3, op: MatMul, inputs: [s, t], outputs: [m3o]}
  - {name: a3, op: Add, inputs: [m3o, b2], outputs: [y3]}
)";

}  // namespace

TEST_CASE("emu.device: the emulated device is what the backend sees") {
  int n = 0;
  REQUIRE(cudaGetDeviceCount(&n) == cudaSuccess);
  CHECK(n == 1);
  cudaDeviceProp prop{};
  REQUIRE(cudaGetDeviceProperties(&prop, 0) == cudaSuccess);
  CHECK(std::string(prop.name) == "fusert CUDA emulator");
  CHECK(prop.major == 9);
  CHECK(prop.minor == 0);
  CHECK(prop.sharedMemPerBlockOptin == 232448);
  CHECK(check_cuda_device().ok());
}

TEST_CASE("emu.capture: synchronous calls inside a capture fail and invalidate it; the graph replays") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  float* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 4 * sizeof(float)) == cudaSuccess);
  // A failed capture: cudaMalloc is not permitted while capturing.
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  void* p = nullptr;
  CHECK(cudaMalloc(&p, 16) == cudaErrorStreamCaptureUnsupported);
  cudaGraph_t g = nullptr;
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
  CHECK(g == nullptr);
  cudaGetLastError();
  // A good capture: the memset is recorded, not run, until the graph is launched.
  REQUIRE(cudaMemsetAsync(d, 0, 4 * sizeof(float), s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  CHECK(cudaStreamIsCapturing(s, &cs) == cudaSuccess);
  CHECK(cs == cudaStreamCaptureStatusActive);
  CHECK(cudaStreamSynchronize(s) == cudaErrorStreamCaptureUnsupported);
  CHECK(cudaMemsetAsync(d, 0x3f, 4 * sizeof(float), s) == cudaSuccess);
  CHECK(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);  // the sync above invalidated it
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  CHECK(cudaMemsetAsync(d, 0x3f, 4 * sizeof(float), s) == cudaSuccess);
  REQUIRE(cudaStreamEndCapture(s, &g) == cudaSuccess);
  float host[4] = {1, 1, 1, 1};
  REQUIRE(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(host[0] == 0.f);  // recorded, not run
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, g, 0) == cudaSuccess);
  REQUIRE(cudaGraphDestroy(g) == cudaSuccess);
  REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
  REQUIRE(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost) == cudaSuccess);
  CHECK(host[3] != 0.f);
  CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaStreamDestroy(s) == cudaSuccess);
  cudaGetLastError();
}

TEST_CASE("emu.checks: out-of-bounds accesses and overwritten guards are reported") {
  emu::clear_violations();
  float* d = nullptr;
  REQUIRE(cudaMalloc(reinterpret_cast<void**>(&d), 10 * sizeof(float)) == cudaSuccess);
  float host[16] = {};
  CHECK(cudaMemcpy(d, host, 16 * sizeof(float), cudaMemcpyHostToDevice) == cudaErrorInvalidValue);
  CHECK(emu::violations().size() == 1);
  d[10] = 0.f;  // a write past the end lands in the guard bytes
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(emu::violations().size() == 2);
  CHECK(cudaFree(d) == cudaErrorInvalidValue);  // double free
  CHECK(emu::violations().size() == 3);
  emu::clear_violations();
  cudaGetLastError();
}

#define FUSERT_EMU_ZOO(model) \
  TEST_CASE("emu.zoo." model ": CUDA under emulation matches the CPU backend") { zoo_model(model); }

FUSERT_EMU_ZOO("resnet18")
FUSERT_EMU_ZOO("resnet50")
FUSERT_EMU_ZOO("mobilenet_v2")
FUSERT_EMU_ZOO("efficientnet_lite0")
FUSERT_EMU_ZOO("bert_base_layer")
FUSERT_EMU_ZOO("minilm_l6")
FUSERT_EMU_ZOO("transformer_block")
FUSERT_EMU_ZOO("multitask_heads")
FUSERT_EMU_ZOO("branch_merge")

TEST_CASE("emu.multi_anchor: horizontal convs, grouped GEMMs and grouped LayerNorms under emulation") {
  const std::string path = cudatest::write_yaml("fusert-emu-", "multi_anchor", cudatest::kMultiAnchor);
  for (const char* fusion : {"none", "all"}) compare_with_cpu(path, fusion, "multi_anchor");
  std::remove(path.c_str());
}

TEST_CASE("emu.long_chain: a chain split by the 8-operand limit under emulation") {
  const std::string path = cudatest::write_yaml("fusert-emu-", "long_chain", cudatest::long_chain_yaml());
  for (const char* fusion : {"none", "all"}) compare_with_cpu(path, fusion, "long_chain");
  std::remove(path.c_str());
}

TEST_CASE("emu.host_fallback: host steps between device steps (copies around them, no CUDA Graph)") {
  const std::string path = cudatest::write_yaml("fusert-emu-", "host_fallback", kHostFallback);
  SessionOptions o;
  o.device = "cuda";
  o.seeded = true;
  o.fusion = "none";
  o.plan_only = true;
  auto plan = Session::load(path, o);
  REQUIRE_MESSAGE(plan.ok(), plan.status().to_string());
  CHECK((*plan)->stats().host_fallback_steps > 0);
  // Decided by the planner's capability check, so --explain lists them before anything runs.
  int planned_on_host = 0;
  for (const FusionGroup* k : (*plan)->fusion_plan().kernel_groups()) planned_on_host += k->host_reason.empty() ? 0 : 1;
  CHECK(planned_on_host == (*plan)->stats().host_fallback_steps);
  const std::string text = explain_plan((*plan)->graph(), (*plan)->fusion_plan());
  CHECK(text.find("host fallbacks (2 ops the backend runs on the CPU, decided by its capability check):") !=
        std::string::npos);
  CHECK(text.find("  s(Trilu): ") != std::string::npos);
  CHECK(text.find("  sp(ReduceMax): ") != std::string::npos);
  for (const char* fusion : {"none", "all"}) compare_with_cpu(path, fusion, "host_fallback");
  std::remove(path.c_str());
}

TEST_CASE("emu.lt_fallback: where cuBLASLt has no algorithm for an epilogue, the GEMM runs plain and bias_act after") {
  const std::string path = cudatest::write_yaml("fusert-emu-", "gemm_epilogues", kGemmEpilogues);
  compare_with_cpu(path, "all", "gemm_epilogues (cuBLASLt with every epilogue)");
  const int64_t before = cuda::lt_epilogue_fallbacks();
  emu::set_lt_epilogues_refused(true);
  for (const char* fusion : {"none", "all"}) compare_with_cpu(path, fusion, "gemm_epilogues (epilogues refused)");
  compare_with_cpu(kModels + "bert_base_layer.yaml", "all", "bert_base_layer (epilogues refused)");
  emu::set_lt_epilogues_refused(false);
  CHECK(cuda::lt_epilogue_fallbacks() > before);
  std::remove(path.c_str());
}
