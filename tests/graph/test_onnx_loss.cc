// ONNX losses and the extra outputs imported as written-out nodes (graph/onnx/onnx_expand.h):
// NegativeLogLikelihoodLoss (reductions, class weights, ignore_index, [N, C, D] inputs, i32
// targets, a target out of range), SoftmaxCrossEntropyLoss with its log_prob output,
// LayerNormalization's Mean and InvStdDev, Dropout's mask; values worked out by hand.
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

struct Nll {
  Shape xs;
  std::vector<float> x;
  std::vector<int64_t> target;
  std::vector<float> weight;  // empty: none
  std::string reduction = "mean";
  bool ignore = false;
  int64_t ignore_index = 0;
  bool i32 = false;
};

Result<TensorMap> run_nll(const Nll& c, const char* fusion) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", c.xs);
  Shape ts = {c.xs[0]};
  ts.insert(ts.end(), c.xs.begin() + 2, c.xs.end());
  add_input(g, "t", ts, "", -1, c.i32 ? onnx::TensorProto::INT32 : onnx::TensorProto::INT64);
  std::vector<std::string> ins = {"x", "t"};
  if (!c.weight.empty()) {
    add_f32(g, "w", {static_cast<int64_t>(c.weight.size())}, c.weight);
    ins.push_back("w");
  }
  auto* n = add_node(g, "NegativeLogLikelihoodLoss", ins, {"loss"}, "nll");
  str_attr(n, "reduction", c.reduction);
  if (c.ignore) int_attr(n, "ignore_index", c.ignore_index);
  add_output(g, "loss");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "nll.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  Tensor t(c.i32 ? DType::kI32 : DType::kI64, ts);
  for (size_t i = 0; i < c.target.size(); ++i) {
    if (c.i32)
      static_cast<int32_t*>(t.raw())[i] = static_cast<int32_t>(c.target[i]);
    else
      t.i64()[i] = c.target[i];
  }
  return (*s)->run({{"x", Tensor::f32(c.xs, c.x)}, {"t", t}});
}

Tensor nll(const Nll& c, const char* fusion) {
  auto y = run_nll(c, fusion);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("loss").clone();
}

}  // namespace

TEST_CASE("onnx import: NegativeLogLikelihoodLoss by hand") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    Nll c;  // rows of log-probabilities, targets 2 and 0: losses 3 and 0.5
    c.xs = {2, 3};
    c.x = {-1, -2, -3, -0.5f, -1.5f, -2.5f};
    c.target = {2, 0};
    c.reduction = "none";
    check_f32(nll(c, fusion), {2}, {3, 0.5f});
    c.reduction = "sum";
    check_f32(nll(c, fusion), {}, {3.5f});
    c.reduction = "mean";
    check_f32(nll(c, fusion), {}, {1.75f});
    c.i32 = true;
    check_f32(nll(c, fusion), {}, {1.75f});
    c.i32 = false;
    c.weight = {1, 2, 4};  // 3 * 4 and 0.5 * 1; mean over the weights 4 + 1
    c.reduction = "none";
    check_f32(nll(c, fusion), {2}, {12, 0.5f});
    c.reduction = "mean";
    check_f32(nll(c, fusion), {}, {2.5f});
    c.ignore = true;  // target 2 ignored: only row 1 counts, weight 1
    c.ignore_index = 2;
    check_f32(nll(c, fusion), {}, {0.5f});
    c.weight.clear();
    c.reduction = "none";
    check_f32(nll(c, fusion), {2}, {0, 0.5f});
    c.target = {2, 2};  // every sample ignored: the mean is 0 / 0
    c.reduction = "mean";
    check_f32(nll(c, fusion), {}, {std::numeric_limits<float>::quiet_NaN()});
    c.ignore_index = -1;  // an ignore_index outside [0, C) and no weight
    c.target = {-1, 1};
    check_f32(nll(c, fusion), {}, {1.5f});

    Nll d;  // [N, C, D] = [1, 2, 2]: x[0, :, 0] = (-1, -2), x[0, :, 1] = (-3, -4); targets (1, 0)
    d.xs = {1, 2, 2};
    d.x = {-1, -3, -2, -4};
    d.target = {1, 0};
    d.reduction = "none";
    check_f32(nll(d, fusion), {1, 2}, {2, 3});
  }
}

TEST_CASE("onnx import: NegativeLogLikelihoodLoss refuses a target outside its classes") {
  Nll c;
  c.xs = {2, 3};
  c.x = {-1, -2, -3, -0.5f, -1.5f, -2.5f};
  c.target = {3, 0};
  auto y = run_nll(c, "all");
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "target 3 at position 0 of 't' is not a class in [0, 3)"));
  c.target = {0, -1};
  c.ignore = true;
  c.ignore_index = 2;
  y = run_nll(c, "none");
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "target -1 at position 1"));
}

TEST_CASE("onnx import: SoftmaxCrossEntropyLoss and its log_prob") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {2, 2});
    add_input(g, "t", {2}, "", -1, onnx::TensorProto::INT64);
    add_node(g, "SoftmaxCrossEntropyLoss", {"x", "t"}, {"loss", "log_prob"}, "sce");
    add_output(g, "loss");
    add_output(g, "log_prob");
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "sce.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    Tensor t(DType::kI64, {2});
    t.i64()[0] = 0;
    t.i64()[1] = 1;
    // Logits (0, ln 3): softmax (1/4, 3/4); logits (0, 0): (1/2, 1/2). Targets 0 and 1.
    auto y = (*s)->run({{"x", Tensor::f32({2, 2}, {0, std::log(3.f), 0, 0})}, {"t", t}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("log_prob"), {2, 2}, {std::log(0.25f), std::log(0.75f), std::log(0.5f), std::log(0.5f)});
    check_f32(y->at("loss"), {}, {(std::log(4.f) + std::log(2.f)) / 2});
  }
}

TEST_CASE("onnx import: LayerNormalization's Mean and InvStdDev, Dropout's mask") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto m = model(17);
    auto* g = m.mutable_graph();
    add_input(g, "x", {2, 2});
    add_f32(g, "s", {2}, {1, 2});
    auto* ln = add_node(g, "LayerNormalization", {"x", "s"}, {"y", "mean", "inv_std"}, "ln");
    auto* a = ln->add_attribute();
    a->set_name("epsilon");
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(0.f);
    add_node(g, "Dropout", {"y"}, {"z", "mask"}, "drop");
    for (const char* o : {"z", "mean", "inv_std", "mask"}) add_output(g, o);
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "ln_stats.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    // Rows (1, 3) and (0, 4): means 2 and 2, variances 1 and 4.
    auto y = (*s)->run({{"x", Tensor::f32({2, 2}, {1, 3, 0, 4})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("z"), {2, 2}, {-1, 2, -1, 2});
    check_f32(y->at("mean"), {2, 1}, {2, 2});
    check_f32(y->at("inv_std"), {2, 1}, {1, 0.5f});
    const Tensor& mask = y->at("mask");
    REQUIRE(mask.dtype() == DType::kBool);
    REQUIRE(mask.shape() == Shape{2, 2});
    for (int i = 0; i < 4; ++i) CHECK(static_cast<const uint8_t*>(mask.raw())[i] == 1);
  }
}
