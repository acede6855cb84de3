// Zoo plans: every model in models/*.yaml, on seeded weights, (a) fused ("all") against unfused
// ("none") within relative L2 1e-5, (b) its plan dump (graph/fusion/explain.h plan_dump) against
// tests/golden/<model>.plan.txt, so a refactor that changes a plan shows up as a diff, and
// (c) the fusion targets: kernel counts, intermediate traffic, and the strategies per family.
//
// Updating the goldens after an intended planner change:
//   FUSERT_UPDATE_GOLDEN=1 build/tests/test_fusion -ts=fusion.zoo
// writes tests/golden/<model>.plan.txt instead of comparing; review the diff before committing.
#include "tests/fusion/fusion_test_util.h"

#include <cstdlib>
#include <set>
#include <sstream>

using namespace fusert;
using namespace fusert::ftest;

namespace {

const std::string kModels = std::string(FUSERT_SOURCE_DIR) + "/models/";
const std::string kGoldenDir = std::string(FUSERT_TEST_DATA_DIR) + "/golden/";

bool update_golden() {
  const char* v = std::getenv("FUSERT_UPDATE_GOLDEN");
  return v && std::string(v) == "1";
}

// Seeded inputs, except integer inputs (token ids, masks), which need valid values, and BERT's
// f32 0/1 attention mask (100 real tokens, then padding, as tests/models/test_transformers.cc).
TensorMap model_inputs(const Session& s) {
  TensorMap in = s.seeded_inputs(0);
  for (ValueId id : s.graph().inputs) {
    const Value& v = s.graph().value(id);
    if (v.dtype == DType::kI64) {
      Tensor t(DType::kI64, v.shape);
      for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = v.name == "attention_mask" ? 1 : (i * 37 + 11) % 1000;
      in[v.name] = t;
    } else if (v.name == "attention_mask") {
      Tensor t(DType::kF32, v.shape);
      int64_t seq = v.shape.back();
      for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = i % seq < seq * 25 / 32 ? 1.0f : 0.0f;
      in[v.name] = t;
    }
  }
  return in;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f.good()) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// First differing line of two dumps, for a readable failure.
std::string first_difference(const std::string& want, const std::string& got) {
  std::stringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ha = static_cast<bool>(std::getline(a, la)), hb = static_cast<bool>(std::getline(b, lb));
    if (!ha && !hb) return "identical";
    if (!ha || !hb || la != lb) {
      return "line " + std::to_string(line) + ":\n  golden: " + (ha ? la : "<end>") +
             "\n  got:    " + (hb ? lb : "<end>");
    }
  }
}

int strategy_groups(const FusionPlan& p, Strategy s) {
  int n = 0;
  for (const FusionGroup& grp : p.groups) n += grp.strategy == s && !grp.nodes.empty() ? 1 : 0;
  return n;
}

int kind_groups(const FusionPlan& p, GroupKind k) {
  int n = 0;
  for (const FusionGroup* grp : p.kernel_groups()) n += grp->kind == k ? 1 : 0;
  return n;
}

struct ZooRun {
  std::unique_ptr<Session> fused, unfused;
};

// Loads the model both ways (nullptr sessions when the file is absent), checks (a) and (b).
ZooRun check_model(const std::string& model) {
  ZooRun r;
  const std::string path = kModels + model + ".yaml";
  if (!std::filesystem::exists(path)) {
    MESSAGE("models/" << model << ".yaml absent: skipped");
    return r;
  }
  r.fused = open_session(path, "all");
  r.unfused = open_session(path, "raw");  // the graph as written: (a) and (c) measure all passes + fusion
  const Graph& g = r.fused->graph();
  const FusionPlan& p = r.fused->fusion_plan();
  MESSAGE(model << ": family " << p.family << ", " << r.unfused->stats().kernels << " -> " << r.fused->stats().kernels
                << " kernels, intermediate bytes " << r.unfused->stats().intermediate_bytes << " -> "
                << r.fused->stats().intermediate_bytes);

  // (a) fused == unfused on the same inputs.
  TensorMap in = model_inputs(*r.unfused);
  check_outputs_close(run_session(*r.unfused, in), run_session(*r.fused, in), 1e-5);

  // (b) the plan dump against its golden. Made with the reference kernels: the oneDNN backend's
  // capability answers for 1x1 + depthwise blocks depend on the ISA of the machine (oneDNN's
  // single-pass kernel), the reference kernels' refusal does not.
  SessionOptions ref_opt;
  ref_opt.fusion = "all";
  ref_opt.seeded = true;
  ref_opt.cpu_kernels = "reference";
  auto planned = Session::load(path, ref_opt);
  REQUIRE_MESSAGE(planned.ok(), planned.status().to_string());
  std::string dump = plan_dump(planned.value()->graph(), planned.value()->fusion_plan());
  std::string golden_path = kGoldenDir + model + ".plan.txt";
  if (update_golden()) {
    std::ofstream f(golden_path);
    f << dump;
    REQUIRE_MESSAGE(f.good(), "cannot write " << golden_path);
    MESSAGE("wrote " << golden_path);
  } else {
    std::string golden = read_text(golden_path);
    INFO(golden_path << " (regenerate with FUSERT_UPDATE_GOLDEN=1 after an intended planner change)");
    REQUIRE_MESSAGE(!golden.empty(), "missing golden " << golden_path);
    INFO(first_difference(golden, dump));
    CHECK(dump == golden);
  }
  // Every plan agrees with itself: the session's kernel count is the plan's minus its views.
  CHECK(r.fused->stats().kernels == kernel_count(g, p));
  return r;
}

// (c) traffic target for the CNNs: canonicalisation + fusion remove at least 60% of the
// intermediate bytes of the graph as written (fusion raw).
void check_cnn_traffic(const ZooRun& r, double bound = 0.4) {
  if (!r.fused) return;
  CHECK(static_cast<double>(r.fused->stats().intermediate_bytes) <=
        bound * static_cast<double>(r.unfused->stats().intermediate_bytes));
}

}  // namespace

TEST_SUITE("fusion.zoo") {
  TEST_CASE("zoo: resnet18") {
    ZooRun r = check_model("resnet18");
    if (!r.fused) return;
    check_cnn_traffic(r);
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kCross) > 0);
  }

  TEST_CASE("zoo: resnet50 (<= 55 kernels, cross fusion for the residual joins)") {
    ZooRun r = check_model("resnet50");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels <= 55);
    check_cnn_traffic(r);
    CHECK(r.fused->fusion_plan().family == "cnn-residual");
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kVertical) > 0);
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kCross) > 0);
  }

  TEST_CASE("zoo: mobilenet_v2 (<= 53 kernels, vertical fusion first)") {
    ZooRun r = check_model("mobilenet_v2");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels <= 53);
    check_cnn_traffic(r);
    CHECK(r.fused->fusion_plan().family == "cnn-mobile");
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kVertical) > 0);
  }

  TEST_CASE("zoo: mobilenet_v3_small (<= 72 kernels; SE gates not hosted by the gate conv)") {
    ZooRun r = check_model("mobilenet_v3_small");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels <= 72);
    // 0.40 measured: each SE multiply is still a broadcast kernel of its own (the gate is not
    // folded into the projection conv's input yet), so the map is written and read once more.
    check_cnn_traffic(r, 0.42);
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kVertical) > 0);
    int broadcast = 0;
    for (const Rejection& rej : r.fused->fusion_plan().rejected) broadcast += rej.key == "broadcast_join";
    CHECK(broadcast == 9);  // one per squeeze-and-excitation block
  }

  TEST_CASE("zoo: efficientnet_lite0") {
    ZooRun r = check_model("efficientnet_lite0");
    if (!r.fused) return;
    check_cnn_traffic(r);
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kVertical) > 0);
  }

  TEST_CASE("zoo: branch_merge") {
    ZooRun r = check_model("branch_merge");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels == 2);  // on cpu the 1:3 rule holds; see test_cross.cc
  }

  TEST_CASE("zoo: bert_base_layer (<= 6 kernels, horizontal Q/K/V + compound attention)") {
    ZooRun r = check_model("bert_base_layer");
    if (!r.fused) return;
    const FusionPlan& p = r.fused->fusion_plan();
    CHECK(r.fused->stats().kernels <= 6);
    CHECK(p.family == "transformer");
    CHECK(kind_groups(p, GroupKind::kHorizontalGemm) >= 1);
    CHECK(strategy_groups(p, Strategy::kHorizontal) >= 1);
    CHECK(kind_groups(p, GroupKind::kAttention) == 1);
  }

  TEST_CASE("zoo: transformer_block") {
    ZooRun r = check_model("transformer_block");
    if (!r.fused) return;
    CHECK(kind_groups(r.fused->fusion_plan(), GroupKind::kAttention) == 1);
  }

  TEST_CASE("zoo: minilm_l6 (seeded weights, token ids in [0, 1000))") {
    ZooRun r = check_model("minilm_l6");
    if (!r.fused) return;
    CHECK(kind_groups(r.fused->fusion_plan(), GroupKind::kAttention) == 6);
  }

  TEST_CASE("zoo: multitask_heads (2 kernels)") {
    ZooRun r = check_model("multitask_heads");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels == 2);
  }

  // The two real ONNX models, converted by fusert-convert (tools/onnx_models.py zoo): exporters'
  // spellings (Paddle's hard-swish as Add/Clip/Mul/Div arithmetic, a classifier head as MatMul +
  // Softmax, tf2onnx's NHWC Transpose and BN folded into the weights) must still fuse as the
  // hand-written CNNs do, in the right family.
  TEST_CASE("zoo: ppocr_cls (converted from ONNX; <= 68 kernels, hard-swish recognised)") {
    ZooRun r = check_model("ppocr_cls");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels <= 68);  // 110 before the hard-swish rule
    check_cnn_traffic(r, 0.25);             // 0.21 measured
    CHECK(r.fused->fusion_plan().family == "cnn-mobile");
    int hardswish = 0;
    for (const Node& n : r.fused->graph().nodes) hardswish += n.op == OpKind::kHardSwish;
    CHECK(hardswish == 18);  // every hardswish_N.tmp_0 of the file
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kVertical) > 0);
  }

  TEST_CASE("zoo: open_nsfw (converted from ONNX; <= 54 kernels, cross fusion for the residual joins)") {
    ZooRun r = check_model("open_nsfw");
    if (!r.fused) return;
    CHECK(r.fused->stats().kernels <= 54);
    // tf2onnx already folded BatchNorm into the convolutions, so the graph as written has less
    // to remove than the hand-written ResNets: 0.44 measured, with no refused candidate.
    check_cnn_traffic(r, 0.45);
    CHECK(r.fused->fusion_plan().family == "cnn-residual");
    CHECK(strategy_groups(r.fused->fusion_plan(), Strategy::kCross) > 0);
  }

  TEST_CASE("zoo: every model in models/ has a test case above") {
    const std::set<std::string> covered = {"resnet18",           "resnet50",           "mobilenet_v2",
                                           "mobilenet_v3_small", "efficientnet_lite0", "branch_merge",
                                           "bert_base_layer",    "transformer_block",  "minilm_l6",
                                           "multitask_heads",    "ppocr_cls",          "open_nsfw"};
    for (const auto& e : std::filesystem::directory_iterator(kModels)) {
      if (e.path().extension() != ".yaml") continue;
      std::string stem = e.path().stem().string();
      if (read_text(e.path().string()).rfind("fusert_zoo:") != std::string::npos) continue;  // zoo.yaml: a manifest
      INFO("models/" << stem << ".yaml has no zoo plan test (add a TEST_CASE and its golden)");
      CHECK(covered.count(stem) == 1u);
    }
  }

}  // TEST_SUITE
