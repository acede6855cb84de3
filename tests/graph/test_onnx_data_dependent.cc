// Ops whose output size depends on the data (graph/data_dependent.h, runtime/staged.h) against
// values worked out by hand: NonZero -> Transpose -> GatherND -> Mul at three counts in one
// session (0 among them), NonMaxSuppression (IoU, score threshold, per-class limit), TopK with K
// given at run time (and K out of range), Unique (ONNX's own example), the stages in --explain and
// the stats, and a count of 0 that would need a non-empty value computed from an empty one.
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

std::unique_ptr<Session> load(const onnx::ModelProto& m, const std::string& file, const char* fusion = "all") {
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, file), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(*s);
}

std::vector<int64_t> ints(const Tensor& t) {
  REQUIRE(t.dtype() == DType::kI64);
  return std::vector<int64_t>(t.i64(), t.i64() + t.numel());
}

// x [n, 3] -> NonZero(x > 0) -> Transpose -> GatherND(x) * 10
onnx::ModelProto nonzero_model(bool sum) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3}, "n", 0);
  add_f32(g, "zero", {}, {0});
  add_f32(g, "ten", {}, {10});
  add_node(g, "Greater", {"x", "zero"}, {"mask"}, "gt");
  add_node(g, "NonZero", {"mask"}, {"nz"}, "nz");
  ints_attr(add_node(g, "Transpose", {"nz"}, {"idx"}, "tr"), "perm", {1, 0});
  add_node(g, "GatherND", {"x", "idx"}, {"hits"}, "gnd");
  add_node(g, "Mul", {"hits", "ten"}, {"y"}, "mul");
  if (sum) int_attr(add_node(g, "ReduceSum", {"y"}, {"total"}, "sum"), "keepdims", 0);
  add_output(g, sum ? "total" : "y");
  return m;
}

}  // namespace

TEST_CASE("data-dependent: NonZero staged at three counts in one session, by hand") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto s = load(nonzero_model(false), "dd_nonzero.onnx", fusion);
    CHECK(s->stats().execution_stages == 2);
    const std::string ex = s->explain();
    CHECK(has(ex, "Execution stages: 2"));
    CHECK(has(ex, "on the host: NonZero 'nz'"));
    CHECK(has(ex, "count is dim 'nz.n'"));
    REQUIRE(s->outputs().size() == 1);
    CHECK(s->outputs()[0].dims[0].symbol == "nz.n");
    auto y = s->run({{"x", Tensor::f32({2, 3}, {1, -1, 2, -3, 4, 0})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), {3}, {10, 20, 40});
    y = s->run({{"x", Tensor::f32({1, 3}, {0, -2, 0})}});  // no hit: an empty result
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(y->at("y").shape() == Shape{0});
    y = s->run({{"x", Tensor::f32({3, 3}, {5, 5, 5, 1, -1, 1, -1, -1, 2})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), {6}, {50, 50, 50, 10, 10, 20});
    CHECK(s->stats().shape_cache_misses >= 2);  // new counts and sizes: execution plans built for them
  }
}

TEST_CASE("data-dependent: a count of 0 that a non-empty value follows is a clear error") {
  auto s = load(nonzero_model(true), "dd_nonzero_sum.onnx");
  auto y = s->run({{"x", Tensor::f32({2, 3}, {1, -1, 2, -3, 4, 0})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("total"), {}, {70});
  y = s->run({{"x", Tensor::f32({1, 3}, {0, -2, 0})}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "the count 'nz.n' is 0"));
  CHECK(has(y.status().message(), "'total' would not be empty"));
}

TEST_CASE("data-dependent: NonMaxSuppression by hand (IoU, score threshold, per-class limit)") {
  // Box 1 overlaps box 0 with IoU 0.9 / 1.1 = 0.82; box 2 overlaps neither.
  const std::vector<float> boxes = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3};
  auto build = [&](float iou, float score, int64_t max_out) {
    auto m = model(11);
    auto* g = m.mutable_graph();
    add_input(g, "boxes", {1, 3, 4});
    add_input(g, "scores", {1, 1, 3});
    add_i64(g, "max", {max_out});
    add_f32(g, "iou", {1}, {iou});
    add_f32(g, "score", {1}, {score});
    add_node(g, "NonMaxSuppression", {"boxes", "scores", "max", "iou", "score"}, {"sel"}, "nms");
    add_output(g, "sel");
    return m;
  };
  const TensorMap in = {{"boxes", Tensor::f32({1, 3, 4}, boxes)},
                        {"scores", Tensor::f32({1, 1, 3}, {0.9f, 0.8f, 0.7f})}};
  auto run = [&](float iou, float score, int64_t max_out) {
    auto s = load(build(iou, score, max_out), "dd_nms.onnx");
    auto y = s->run(in);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(has(s->explain(), "NonMaxSuppression 'nms'"));
    return ints(y->at("sel"));
  };
  CHECK(run(0.5f, 0.f, 10) == std::vector<int64_t>{0, 0, 0, 0, 0, 2});
  CHECK(run(0.9f, 0.f, 10) == std::vector<int64_t>{0, 0, 0, 0, 0, 1, 0, 0, 2});  // 0.82 <= 0.9: kept
  CHECK(run(0.5f, 0.75f, 10) == std::vector<int64_t>{0, 0, 0});                  // 0.7 below the threshold
  CHECK(run(0.5f, 0.f, 1) == std::vector<int64_t>{0, 0, 0});
  CHECK(run(0.5f, 0.95f, 10).empty());  // nothing selected: [0, 3]
}

TEST_CASE("data-dependent: TopK with K given at run time, and K out of range") {
  auto m = model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 4});
  add_input(g, "k", {1}, "", -1, onnx::TensorProto::INT64);
  add_node(g, "TopK", {"x", "k"}, {"v", "i"}, "topk");
  add_node(g, "Relu", {"v"}, {"y"}, "relu");
  add_output(g, "y");
  add_output(g, "i");
  auto s = load(m, "dd_topk.onnx");
  const Tensor x = Tensor::f32({2, 4}, {3, -1, 4, 1, -5, -9, -2, -6});
  Tensor k(DType::kI64, {1});
  k.i64()[0] = 2;
  auto y = s->run({{"x", x}, {"k", k}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {2, 2}, {4, 3, 0, 0});
  CHECK(ints(y->at("i")) == std::vector<int64_t>{2, 0, 2, 0});
  k.i64()[0] = 3;
  y = s->run({{"x", x}, {"k", k}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {2, 3}, {4, 3, 1, 0, 0, 0});
  k.i64()[0] = 5;
  y = s->run({{"x", x}, {"k", k}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "TopK 'topk'"));
  CHECK(has(y.status().message(), "K = 5 is outside [0, 4]"));
}

TEST_CASE("data-dependent: Unique, ONNX's example by hand") {
  auto m = model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", {6});
  add_node(g, "Unique", {"x"}, {"y", "first", "inverse", "counts"}, "uniq");
  for (const char* o : {"y", "first", "inverse", "counts"}) add_output(g, o);
  auto s = load(m, "dd_unique.onnx");
  auto y = s->run({{"x", Tensor::f32({6}, {2, 1, 1, 3, 4, 3})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {4}, {1, 2, 3, 4});
  CHECK(ints(y->at("first")) == std::vector<int64_t>{1, 0, 3, 4});
  CHECK(ints(y->at("inverse")) == std::vector<int64_t>{1, 0, 0, 2, 3, 2});
  CHECK(ints(y->at("counts")) == std::vector<int64_t>{2, 1, 2, 1});
}

TEST_CASE("data-dependent: a Shape of a count's output is recomputed per run (the node reading it is staged)") {
  // K = Shape(NonZero(x > 0))[1], the number of positive elements: TopK reads it through a constant
  // the import folds from the count, with no edge from NonZero, so only the count orders them.
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {8});
  add_f32(g, "zero", {}, {0});
  add_i64(g, "one", {1});
  add_i64(g, "two", {2});
  add_i64(g, "first", {0});
  add_node(g, "Greater", {"x", "zero"}, {"pos"}, "gt");
  add_node(g, "NonZero", {"pos"}, {"nz"}, "nz");
  add_node(g, "Shape", {"nz"}, {"s"}, "shape");
  add_node(g, "Slice", {"s", "one", "two", "first"}, {"k"}, "slice");
  add_node(g, "TopK", {"x", "k"}, {"v", "i"}, "topk");
  add_output(g, "v");
  auto s = load(m, "dd_shape_of_count.onnx");
  auto y = s->run({{"x", Tensor::f32({8}, {3, -1, 4, -1, 5, -9, 2, 6})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("v"), {5}, {6, 5, 4, 3, 2});
  y = s->run({{"x", Tensor::f32({8}, {-3, -1, 4, -1, -5, -9, -2, -6})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("v"), {1}, {4});
  y = s->run({{"x", Tensor::f32({8}, {-3, -1, -4, -1, -5, -9, -2, -6})}});  // K = 0: empty
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(y->at("v").shape() == Shape{0});
}

TEST_CASE("data-dependent: Unique treats NaN as one value after every number (numpy), -0 as 0") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", {7});
  add_node(g, "Unique", {"x"}, {"y", "first", "inverse", "counts"}, "uniq");
  for (const char* o : {"y", "first", "inverse", "counts"}) add_output(g, o);
  auto s = load(m, "dd_unique_nan.onnx");
  auto y = s->run({{"x", Tensor::f32({7}, {2, nan, 1, -0.f, nan, 0, 2})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {4}, {0, 1, 2, nan});
  CHECK(ints(y->at("first")) == std::vector<int64_t>{3, 2, 0, 1});
  CHECK(ints(y->at("inverse")) == std::vector<int64_t>{2, 3, 1, 0, 3, 0, 2});
  CHECK(ints(y->at("counts")) == std::vector<int64_t>{2, 1, 2, 2});
}

TEST_CASE("data-dependent: a NonZero inside the branch a run-time If takes (the branch staged in turn)") {
  // then: Shape(NonZero(x > 0)) = [2, hits]; else: Shape(x) = [1, 6]; cond = sum(x) > 0.
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 6});
  add_f32(g, "zero", {}, {0});
  int_attr(add_node(g, "ReduceSum", {"x"}, {"sum"}, "sum"), "keepdims", 0);
  add_node(g, "Greater", {"sum", "zero"}, {"cond"}, "cond");
  onnx::GraphProto then_g, else_g;
  add_node(&then_g, "Greater", {"x", "zero"}, {"pos"}, "gt");
  add_node(&then_g, "NonZero", {"pos"}, {"nz"}, "nz");
  add_node(&then_g, "Shape", {"nz"}, {"s"}, "shape");
  add_output(&then_g, "s");
  add_node(&else_g, "Shape", {"x"}, {"s2"}, "shape2");
  add_output(&else_g, "s2");
  auto* n = add_node(g, "If", {"cond"}, {"y"}, "if0");
  for (const auto& [key, gp] :
       {std::pair<const char*, onnx::GraphProto*>{"then_branch", &then_g}, {"else_branch", &else_g}}) {
    auto* a = n->add_attribute();
    a->set_name(key);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *gp;
  }
  add_output(g, "y");
  auto s = load(m, "dd_if_nonzero.onnx");
  auto y = s->run({{"x", Tensor::f32({1, 6}, {1, -1, 2, 0, 3, -1})}});  // sum 4: then, 3 hits
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints(y->at("y")) == std::vector<int64_t>{2, 3});
  y = s->run({{"x", Tensor::f32({1, 6}, {-1, -1, 2, 0, -3, -1})}});  // sum -4: else
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints(y->at("y")) == std::vector<int64_t>{1, 6});
}

TEST_CASE("data-dependent: Reshape and Expand to a shape given at run time (one count per dim), by hand") {
  // y = Relu(Reshape(x, s)); z = Expand(b, s) + 1 with b [1, 2]; s an i64 input of 2 values.
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_input(g, "s", {2}, "", -1, onnx::TensorProto::INT64);
  add_f32(g, "b", {1, 2}, {1, -2});
  add_f32(g, "one", {}, {1});
  add_node(g, "Reshape", {"x", "s"}, {"r"}, "rs");
  add_node(g, "Relu", {"r"}, {"y"}, "relu");
  add_node(g, "Expand", {"b", "s"}, {"e"}, "ex");
  add_node(g, "Add", {"e", "one"}, {"z"}, "add");
  add_output(g, "y");
  add_output(g, "z");
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto s = load(m, "dd_reshape_expand.onnx", fusion);
    CHECK(has(s->explain(), "its shape is dims 'rs.n0', 'rs.n1'"));
    auto shape = [](std::vector<int64_t> v) {
      Tensor t(DType::kI64, {static_cast<int64_t>(v.size())});
      std::copy(v.begin(), v.end(), t.i64());
      return t;
    };
    const Tensor x = Tensor::f32({2, 3}, {1, -2, 3, -4, 5, -6});
    auto y = s->run({{"x", x}, {"s", shape({3, 2})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), {3, 2}, {1, 0, 3, 0, 5, 0});
    check_f32(y->at("z"), {3, 2}, {2, -1, 2, -1, 2, -1});
    y = s->run({{"x", x}, {"s", shape({6, 1})}});  // b [1, 2] with [6, 1]: [6, 2]
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), {6, 1}, {1, 0, 3, 0, 5, 0});
    check_f32(y->at("z"), {6, 2}, {2, -1, 2, -1, 2, -1, 2, -1, 2, -1, 2, -1});
    y = s->run({{"x", x}, {"s", shape({-1, 1})}});  // Reshape's -1; Expand has none: an error naming it
    REQUIRE_FALSE(y.ok());
    CHECK(has(y.status().message(), "'ex'"));
    CHECK(has(y.status().message(), "invalid dimension -1 in shape [-1, 1]"));
    y = s->run({{"x", x}, {"s", shape({4, 2})}});  // 8 elements from 6: an error naming the node
    REQUIRE_FALSE(y.ok());
    CHECK(has(y.status().message(), "'rs'"));
    CHECK(has(y.status().message(), "cannot reshape [2, 3] (6 elements) to [4, 2]"));
  }
}
