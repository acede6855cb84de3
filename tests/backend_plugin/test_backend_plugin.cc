// The backend plug-in seam (runtime/backend.h), proved by a backend that lives in this folder
// only (ref_backend.h): registered at run time, it is a device like the built-in ones to the
// registry, the session, the planner and the options check, and its results equal PyTorch's.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "fusert/fusert.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "tests/backend_plugin/ref_backend.h"

using namespace fusert;

namespace {

const std::string kRoot = FUSERT_SOURCE_DIR;

// Registers "ref" once per process (the registry refuses a second entry of one name).
void ensure_registered() {
  static const Status st = register_backend(plugin::ref_backend_info());
  REQUIRE_MESSAGE(st.ok(), st.to_string());
}

Result<std::unique_ptr<Session>> load_ref(const std::string& model, const std::string& fusion) {
  SessionOptions o;
  o.device = "ref";
  o.seeded = true;
  o.fusion = fusion;
  return Session::load(kRoot + "/models/" + model + ".yaml", o);
}

}  // namespace

TEST_CASE("plugin: the registry lists the new device after the built-in ones, and refuses a second 'ref'") {
  ensure_registered();
  const std::vector<std::string> names = devices();
  REQUIRE(names.size() >= 2);
  CHECK(names.front() == "cpu");
  CHECK(names.back() == "ref");
  CHECK(backend_choices().find(", ref") == std::string::npos);
  CHECK(backend_choices().find(" or ref") != std::string::npos);
  const Status again = register_backend(plugin::ref_backend_info());
  CHECK(again.code() == StatusCode::kInvalidArgument);
  CHECK(again.message().find("'ref' is registered already") != std::string::npos);
  BackendInfo nameless = plugin::ref_backend_info();
  nameless.name.clear();
  CHECK(register_backend(nameless).code() == StatusCode::kInvalidArgument);
  SessionOptions o;
  o.device = "tpu";
  auto bad = Session::load(kRoot + "/models/resnet18.yaml", o);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("unknown device 'tpu' (" + backend_list() + ")") != std::string::npos);
  CHECK(backend_list().find(", ref") != std::string::npos);
}

TEST_CASE("plugin: the planner prices with the backend's roofline and asks its capability") {
  ensure_registered();
  FusionOptions fopt;
  SessionOptions so;
  so.device = "ref";
  auto backend = plugin::ref_backend_info().make(so);
  REQUIRE(configure_planner(*backend, so, &fopt).ok());
  CHECK(fopt.backend == "ref");
  CHECK(fopt.roofline.peak_flops == plugin::kRefRoofline.peak_flops);
  CHECK(fopt.roofline.launch_us == plugin::kRefRoofline.launch_us);
  // On the CPU the pre-LN block plans an attention group and a horizontal QKV GEMM; "ref"
  // refuses both kinds, with its reason, and fuses the kinds it declared.
  auto s = load_ref("transformer_block", "all");
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const FusionPlan& plan = (*s)->fusion_plan();
  int refused = 0;
  for (const Rejection& r : plan.rejected)
    refused += r.key == "backend" && r.reason.find("ref runs single ops") != std::string::npos;
  CHECK(refused >= 2);
  for (const FusionGroup* g : plan.kernel_groups()) {
    CAPTURE(g->name);
    CHECK(
        (g->kind == GroupKind::kSingle || g->kind == GroupKind::kAnchorEpilogue || g->kind == GroupKind::kElementwise));
  }
  CHECK(plan.fused_ops() > 0);
}

TEST_CASE("plugin: outputs on 'ref' equal PyTorch's (tools/make_goldens.py), fusion none and all") {
  ensure_registered();
  for (const auto& [model, output] : {std::pair<std::string, std::string>{"resnet18", "logits"},
                                      std::pair<std::string, std::string>{"transformer_block", "y"}}) {
    auto golden = read_npy(kRoot + "/models/golden/" + model + ".seeded.npy");
    REQUIRE_MESSAGE(golden.ok(), golden.status().to_string());
    for (const char* fusion : {"none", "all"}) {
      CAPTURE(model);
      CAPTURE(fusion);
      auto s = load_ref(model, fusion);
      REQUIRE_MESSAGE(s.ok(), s.status().to_string());
      auto out = (*s)->run((*s)->seeded_inputs(0));
      REQUIRE_MESSAGE(out.ok(), out.status().to_string());
      const Tensor& y = out->at(output);
      REQUIRE(y.numel() == golden->numel());
      CHECK(relative_l2(y, *golden) <= 1e-4);
    }
  }
}

TEST_CASE("plugin: the backend owns its options: bf16 on 'ref' is refused with its own reason") {
  ensure_registered();
  SessionOptions o;
  o.device = "ref";
  o.seeded = true;
  o.precision = "bf16";
  auto s = Session::load(kRoot + "/models/resnet18.yaml", o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == StatusCode::kUnsupported);
  CHECK(s.status().message().find("device 'ref' runs f32 only") != std::string::npos);
}

TEST_CASE("plugin: a planner run without a backend prices as the CPU backend's registry entry says") {
  const BackendInfo* cpu = find_backend("cpu");
  REQUIRE(cpu != nullptr);
  const Roofline planner_default;
  CHECK(cpu->roofline.peak_flops == planner_default.peak_flops);
  CHECK(cpu->roofline.bytes_per_s == planner_default.bytes_per_s);
  CHECK(cpu->roofline.launch_us == planner_default.launch_us);
  SessionOptions o;
  o.device = "cpu";
  o.precision = "fp16";
  auto s = Session::load(kRoot + "/models/resnet18.yaml", o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("precision: expected f32 or bf16, got 'fp16'") != std::string::npos);
}
