// ONNX input dims left open (graph/onnx/onnx_dims.h): with no --shape and no --dim, every
// symbolic dim (named, "?", unnamed) takes its size from the inputs at run(), one session for
// every size; values by hand.
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

// x [batch, 3, height, ?] -> Relu -> Reshape to [batch, -1] through the exporters' Shape chain.
onnx::ModelProto open_model() {
  auto m = model(13);
  auto* g = m.mutable_graph();
  auto* v = g->add_input();
  v->set_name("x");
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  t->mutable_shape()->add_dim()->set_dim_param("batch");
  t->mutable_shape()->add_dim()->set_dim_value(3);
  t->mutable_shape()->add_dim()->set_dim_param("height");
  t->mutable_shape()->add_dim()->set_dim_param("?");  // no name: "x.3"
  add_i64(g, "zero", {0});
  add_i64(g, "minus_one", {-1});
  add_node(g, "Relu", {"x"}, {"r"});
  add_node(g, "Shape", {"r"}, {"s"});
  add_node(g, "Gather", {"s", "zero"}, {"n"});
  auto* cat = add_node(g, "Concat", {"n", "minus_one"}, {"target"});
  auto* ax = cat->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(0);
  add_node(g, "Reshape", {"r", "target"}, {"y"});
  add_output(g, "y");
  return m;
}

}  // namespace

TEST_CASE("onnx import: dims left open take every size from the inputs, one session, each shape planned once") {
  const std::string path = save(open_model(), "open_dims.onnx");
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(path, opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::vector<TensorInfo> ins = (*s)->inputs();
    REQUIRE(ins.size() == 1);
    CHECK(ins[0].dims[0].symbol == "batch");
    CHECK(ins[0].dims[0].value == 1);  // planned at a batch of 1 ...
    CHECK(ins[0].dims[1].symbol.empty());
    CHECK(ins[0].dims[2].symbol == "height");
    CHECK(ins[0].dims[2].value == 224);  // ... and an image side of 224
    CHECK(ins[0].dims[3].symbol == "x.3");
    const std::vector<TensorInfo> outs = (*s)->outputs();
    CHECK(outs[0].dims[0].symbol == "batch");
    CHECK(outs[0].dims[1].symbol == "?");  // 3 * height * x.3
    const Shape shapes[] = {{1, 3, 4, 5}, {2, 3, 2, 7}, {1, 3, 4, 5}};
    for (const Shape& shape : shapes) {
      const int64_t n = shape[0] * shape[1] * shape[2] * shape[3];
      std::vector<float> v(static_cast<size_t>(n));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * (i % 3 == 0 ? -1.f : 0.5f);
      auto y = (*s)->run({{"x", Tensor::f32(shape, v)}});
      REQUIRE_MESSAGE(y.ok(), y.status().to_string());
      const Tensor& out = y->at("y");
      REQUIRE(out.shape() == Shape{shape[0], n / shape[0]});
      for (size_t i = 0; i < v.size(); ++i) CHECK(out.f32()[i] == std::max(v[i], 0.f));
    }
    CHECK((*s)->stats().shape_cache_misses == 2);  // two new shapes, the third run a hit
    CHECK((*s)->stats().shape_cache_hits == 1);
    auto zero = (*s)->run({{"x", Tensor(DType::kF32, {1, 3, 0, 5})}});  // an empty image: an empty result
    REQUIRE_MESSAGE(zero.ok(), zero.status().to_string());
    CHECK(zero->at("y").shape() == Shape{1, 0});
    auto fixed = (*s)->run({{"x", Tensor(DType::kF32, {1, 4, 2, 5})}});
    REQUIRE(!fixed.ok());
    CHECK(has(fixed.status().message(), "input 'x' dim 1 is 4 but the model fixes it to 3"));
  }
}

TEST_CASE("onnx import: an open dim can be given a range by its symbol, an unnamed one as INPUT.D") {
  SessionOptions opt;
  opt.threads = 1;
  opt.dim_ranges["x.3"] = DimRange{1, 8, 4};
  auto s = Session::load(save(open_model(), "open_dims_range.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK((*s)->inputs()[0].dims[3].value == 4);
  CHECK((*s)->inputs()[0].dims[3].max == 8);
  auto big = (*s)->run({{"x", Tensor(DType::kF32, {1, 3, 2, 9})}});
  REQUIRE(!big.ok());
  CHECK(has(big.status().message(), "outside the range 1..8"));
}

TEST_CASE("onnx import: a model that imports at none of the sizes tried names them and asks for --shape") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 0}, "", 1);  // [1, ?]: an unnamed dim
  add_i64(g, "target", {3, 7});
  add_node(g, "Reshape", {"x", "target"}, {"y"});
  add_output(g, "y");
  const std::string path = save(m, "open_none.onnx");
  auto s = Session::load(path, SessionOptions{});
  REQUIRE(!s.ok());
  CHECK(has(s.status().message(), "with the input dims no --shape binds at x.1 = 128"));
  CHECK(has(s.status().message(), "bind them with --shape or --dim"));
  SessionOptions bound;
  bound.input_shapes["x"] = {1, 21};
  auto ok = Session::load(path, bound);
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
}

TEST_CASE("onnx import: a constant computed from an open dim is never baked into a pattern rewrite") {
  // c = width / 128 * 6 is 6 at the planned width (128): x * clip(x + 3, 0, 6) / c looks like
  // hard-swish there, but at width 4 c is 0.1875, and the result must follow it.
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 0}, "", 1);
  add_i64(g, "one", {1});
  add_f32(g, "k128", {}, {128.f});
  add_f32(g, "k6", {}, {6.f});
  add_f32(g, "k3", {}, {3.f});
  add_f32(g, "k0", {}, {0.f});
  add_node(g, "Shape", {"x"}, {"s"});
  add_node(g, "Gather", {"s", "one"}, {"w"});
  int_attr(add_node(g, "Cast", {"w"}, {"wf"}), "to", onnx::TensorProto::FLOAT);
  add_node(g, "Div", {"wf", "k128"}, {"r"});
  add_node(g, "Mul", {"r", "k6"}, {"c"});
  add_node(g, "Add", {"x", "k3"}, {"a"});
  add_node(g, "Clip", {"a", "k0", "k6"}, {"cl"});
  add_node(g, "Mul", {"x", "cl"}, {"mx"});
  add_node(g, "Div", {"mx", "c"}, {"y"});
  add_output(g, "y");
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "open_hswish.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({1, 4}, {-4.f, -1.f, 1.f, 4.f})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    // c = 4 / 128 * 6 = 0.1875: [0, -1 * 2, 1 * 4, 4 * 6] / 0.1875
    check_f32(y->at("y"), {1, 4}, {0.f, -10.6666667f, 21.3333333f, 128.f});
  }
}

TEST_CASE("onnx import: integer arithmetic that cannot fold (division by zero, INT64_MIN / -1) is an error") {
  for (int64_t num : {int64_t{5}, std::numeric_limits<int64_t>::min()}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 4});
    add_i64(g, "a", {num});
    add_i64(g, "b", {num == 5 ? 0 : -1});
    add_node(g, "Div", {"a", "b"}, {"q"});
    int_attr(add_node(g, "Cast", {"q"}, {"qf"}), "to", onnx::TensorProto::FLOAT);
    add_node(g, "Add", {"x", "qf"}, {"y"});
    add_output(g, "y");
    auto s = Session::load(save(m, "int_div.onnx"), SessionOptions{});
    REQUIRE(!s.ok());
    CHECK(s.status().code() == StatusCode::kUnsupported);
    CHECK(has(s.status().message(), "integer arithmetic only on constants"));
  }
}

TEST_CASE("open dims: an empty input gives the empty outputs that follow it, or an error naming the input") {
  // y = Relu(x) * 2 follows the open batch; s = ReduceSum(x) over everything does not.
  auto m = onnx_test::model(13);
  auto* g = m.mutable_graph();
  onnx_test::add_input(g, "x", {1, 3}, "batch", 0);
  onnx_test::add_f32(g, "two", {}, {2});
  onnx_test::add_node(g, "Relu", {"x"}, {"r"}, "relu");
  onnx_test::add_node(g, "Mul", {"r", "two"}, {"y"}, "mul");
  onnx_test::add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(onnx_test::save(m, "empty_batch.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor(DType::kF32, {0, 3})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(y->at("y").shape() == Shape{0, 3});
  y = (*s)->run({{"x", Tensor::f32({2, 3}, {1, -1, 2, -2, 3, -3})}});  // and on at other sizes
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(y->at("y").f32()[4] == 6.f);
  onnx_test::int_attr(onnx_test::add_node(g, "ReduceSum", {"x"}, {"s"}, "sum"), "keepdims", 0);
  onnx_test::add_output(g, "s");
  s = Session::load(onnx_test::save(m, "empty_batch_sum.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  y = (*s)->run({{"x", Tensor(DType::kF32, {0, 3})}});
  REQUIRE_FALSE(y.ok());
  CHECK(y.status().message().find("input 'x' dim 0 ('batch') is 0") != std::string::npos);
}
