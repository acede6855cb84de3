// The ops ONNX exports bring, imported from models built with the ONNX protobuf API and run:
// Expand, Pad, Tile, ArgMax/ArgMin, comparisons and logic, Max/Min, PRelu, Resize, ConvTranspose,
// ConstantOfShape and Range, and opset 21's spellings; values by hand.
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;
TEST_CASE("onnx import: Expand and Pad (constant, reflect, edge) by hand") {
  SessionOptions opt;
  opt.threads = 1;
  {  // Expand [3, 1] to [2, 3, 4]
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {3, 1});
    add_i64(g, "shape", {2, 1, 4});
    add_node(g, "Expand", {"x", "shape"}, {"y"});
    add_output(g, "y");
    auto s = Session::load(save(m, "expand.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({3, 1}, {1, 2, 3})}});
    REQUIRE(y.ok());
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) CHECK(t.f32()[i] == static_cast<float>((i / 4) % 3 + 1));
  }
  // Pad [1, 3] by 2 before and 1 after on the last dim.
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"constant", {7, 7, 1, 2, 3, 7}}, {"reflect", {3, 2, 1, 2, 3, 2}}, {"edge", {1, 1, 1, 2, 3, 3}}};
  for (const auto& [mode, want] : cases) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3});
    add_i64(g, "pads", {0, 2, 0, 1});
    add_f32(g, "value", {}, {7.f});
    auto* n = add_node(g, "Pad", {"x", "pads", "value"}, {"y"}, "pad");
    auto* a = n->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
    add_output(g, "y");
    auto s = Session::load(save(m, "pad_" + mode + ".onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
    REQUIRE(y.ok());
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{1, 6});
    for (size_t i = 0; i < 6; ++i) CHECK(t.f32()[i] == want[i]);
  }
}

// An i64 constant_value above 2^53 has no exact double: it must reach the output bit for bit.
TEST_CASE("onnx import: Pad of i64 data keeps a constant_value above 2^53 exact") {
  SessionOptions opt;
  opt.threads = 1;
  const int64_t big = (int64_t{1} << 53) + 1;
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2}, "", -1, onnx::TensorProto::INT64);
  add_i64(g, "pads", {1, 2});
  add_i64(g, "value", {big});
  add_node(g, "Pad", {"x", "pads", "value"}, {"y"}, "pad");
  add_output(g, "y");
  auto s = Session::load(save(m, "pad_i64.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  Tensor x(DType::kI64, {2});
  static_cast<int64_t*>(x.raw())[0] = -5;
  static_cast<int64_t*>(x.raw())[1] = 6;
  auto y = (*s)->run({{"x", x}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  const Tensor& t = y->at("y");
  REQUIRE(t.shape() == Shape{5});
  const std::vector<int64_t> want = {big, -5, 6, big, big};
  for (size_t i = 0; i < want.size(); ++i) CHECK(static_cast<const int64_t*>(t.raw())[i] == want[i]);
}

// Found by a breaker run, checked against ONNX Runtime 1.32: a negative-step Slice whose start is
// below -dim keeps element 0 (starts clamp into [0, d - 1]); Cast from i64 keeps 2^53 + 1 and
// wraps into i32 as numpy does; ReduceMax/Min over an empty axis give -inf/+inf (was SIGSEGV).
TEST_CASE("onnx import: negative-step Slice clamp, exact integer Cast, empty ReduceMax") {
  SessionOptions opt;
  opt.threads = 1;
  {  // x [5, 1] = 0..4; starts -7, ends -100, step -1 on axis 0 -> [x[0]]
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {5, 1});
    add_i64(g, "st", {-7});
    add_i64(g, "en", {-100});
    add_i64(g, "ax", {0});
    add_i64(g, "sp", {-1});
    add_node(g, "Slice", {"x", "st", "en", "ax", "sp"}, {"y"});
    add_output(g, "y");
    Tensor y = run_model(m, "slice_negstep.onnx", {{"x", Tensor::f32({5, 1}, {0, 1, 2, 3, 4})}}, "y");
    check_f32(y, {1, 1}, {0});
  }
  const int64_t big = (int64_t{1} << 53) + 1;
  for (const auto& [to, want] : std::vector<std::pair<int, std::vector<int64_t>>>{
           {onnx::TensorProto::INT64, {big, -(int64_t{1} << 31) - 1}}, {onnx::TensorProto::INT32, {1, 2147483647}}}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {2}, "", -1, onnx::TensorProto::INT64);
    int_attr(add_node(g, "Cast", {"x"}, {"y"}), "to", to);
    add_output(g, "y");
    Tensor x(DType::kI64, {2});
    static_cast<int64_t*>(x.raw())[0] = big;  // low 32 bits: 1
    static_cast<int64_t*>(x.raw())[1] = -(int64_t{1} << 31) - 1;
    auto s = Session::load(save(m, "cast_i64_" + std::to_string(to) + ".onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", x}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    const Tensor& t = y->at("y");
    for (size_t i = 0; i < 2; ++i) {
      const int64_t got = to == onnx::TensorProto::INT64 ? static_cast<const int64_t*>(t.raw())[i]
                                                         : static_cast<const int32_t*>(t.raw())[i];
      CHECK(got == want[i]);
    }
  }
  for (const std::string op : {"ReduceMax", "ReduceMin"}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3}, "n", 0);
    ints_attr(add_node(g, op, {"x"}, {"y"}), "axes", {0});
    add_output(g, "y");
    SessionOptions o = opt;
    o.input_shapes["x"] = {0, 3};
    auto s = Session::load(save(m, "empty_" + op + ".onnx"), o);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor(DType::kF32, {0, 3})}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    const float inf = std::numeric_limits<float>::infinity();
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{1, 3});
    for (int64_t i = 0; i < 3; ++i) CHECK(t.f32()[i] == (op == "ReduceMax" ? -inf : inf));
  }
}

TEST_CASE("onnx import: Tile by hand; ArgMax with a NaN (numpy: the NaN's index)") {
  SessionOptions opt;
  opt.threads = 1;
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 2});
  add_i64(g, "reps", {1, 2});
  add_node(g, "Tile", {"x", "reps"}, {"y"});
  add_output(g, "y");
  auto s = Session::load(save(m, "tile.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor::f32({2, 2}, {1, 2, 3, 4})}});
  REQUIRE(y.ok());
  const std::vector<float> want = {1, 2, 1, 2, 3, 4, 3, 4};
  REQUIRE(y->at("y").shape() == Shape{2, 4});
  for (size_t i = 0; i < want.size(); ++i) CHECK(y->at("y").f32()[i] == want[i]);

  auto a = model(13);
  add_input(a.mutable_graph(), "x", {2, 3});
  auto* n = add_node(a.mutable_graph(), "ArgMax", {"x"}, {"i"});
  auto* ax = n->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(1);
  add_output(a.mutable_graph(), "i");
  auto sa = Session::load(save(a, "argmax.onnx"), opt);
  REQUIRE_MESSAGE(sa.ok(), sa.status().to_string());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = (*sa)->run({{"x", Tensor::f32({2, 3}, {1, 9, 3, 4, nan, 8})}});
  REQUIRE(r.ok());
  const Tensor& t = r->at("i");
  REQUIRE(t.dtype() == DType::kI64);
  REQUIRE(t.shape() == Shape{2, 1});
  CHECK(t.i64()[0] == 1);
  CHECK(t.i64()[1] == 1);
}

TEST_CASE("onnx import: Less/Greater/Equal/Not/And with broadcasting and NaN feed a Where at run time") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_input(g, "t", {3});
  add_node(g, "Less", {"x", "t"}, {"lt"});
  add_node(g, "Greater", {"x", "t"}, {"gt"});
  add_node(g, "Equal", {"x", "t"}, {"eq"});
  add_node(g, "Or", {"lt", "gt"}, {"ne"});
  add_node(g, "Not", {"ne"}, {"not_ne"});  // == x == t, except NaN: neither less, greater nor equal
  add_node(g, "And", {"not_ne", "eq"}, {"both"});
  add_node(g, "Where", {"lt", "t", "x"}, {"y"});  // max(x, t) where comparable, else x
  add_output(g, "y");
  add_output(g, "not_ne");
  add_output(g, "both");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "compare.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", Tensor::f32({2, 3}, {1, 5, nan, 2, 2, 7})}, {"t", Tensor::f32({3}, {2, 2, 2})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("y"), {2, 3}, {2, 5, nan, 2, 2, 7});
  const Tensor& nn = r->at("not_ne");
  const Tensor& both = r->at("both");
  REQUIRE(nn.dtype() == DType::kBool);
  const std::vector<int> want_nn = {0, 0, 1, 1, 1, 0}, want_both = {0, 0, 0, 1, 1, 0};
  for (size_t i = 0; i < 6; ++i) {
    CHECK_MESSAGE(static_cast<const uint8_t*>(nn.raw())[i] == want_nn[i], "not_ne " << i);
    CHECK_MESSAGE(static_cast<const uint8_t*>(both.raw())[i] == want_both[i], "both " << i);
  }
}

TEST_CASE("onnx import: Max/Min of three broadcast inputs, NaN wins; ArgMin with a NaN") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "a", {1, 3});
  add_input(g, "b", {1});
  add_input(g, "c", {2, 1});
  add_node(g, "Max", {"a", "b", "c"}, {"mx"});
  add_node(g, "Min", {"a", "b", "c"}, {"mn"});
  add_output(g, "mx");
  add_output(g, "mn");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "extrema.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run(
      {{"a", Tensor::f32({1, 3}, {1, nan, 3})}, {"b", Tensor::f32({1}, {2})}, {"c", Tensor::f32({2, 1}, {0, 5})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("mx"), {2, 3}, {2, nan, 3, 5, nan, 5});
  check_f32(r->at("mn"), {2, 3}, {0, nan, 0, 1, nan, 2});

  auto a = model(13);
  add_input(a.mutable_graph(), "x", {2, 3});
  int_attr(add_node(a.mutable_graph(), "ArgMin", {"x"}, {"i"}), "axis", 1);
  add_output(a.mutable_graph(), "i");
  const Tensor t = run_model(a, "argmin.onnx", {{"x", Tensor::f32({2, 3}, {4, 1, 3, 4, nan, -8})}}, "i");
  REQUIRE(t.dtype() == DType::kI64);
  CHECK(t.i64()[0] == 1);
  CHECK(t.i64()[1] == 1);
}

TEST_CASE("onnx import: PRelu per channel, opset 9 ([C,1,1] slope) and opset 6 ([C] slope)") {
  for (int64_t opset : {6, 9}) {
    auto m = model(opset);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 2, 1, 2});
    if (opset < 7)
      add_f32(g, "slope", {2}, {0.5f, -2.0f});
    else
      add_f32(g, "slope", {2, 1, 1}, {0.5f, -2.0f});
    add_node(g, "PRelu", {"x", "slope"}, {"y"});
    add_output(g, "y");
    const Tensor y = run_model(m, "prelu" + std::to_string(opset) + ".onnx",
                               {{"x", Tensor::f32({1, 2, 1, 2}, {-4, 3, -1, 0})}}, "y");
    check_f32(y, {1, 2, 1, 2}, {-2, 3, 2, 0});
  }
}

TEST_CASE("onnx import: Resize nearest (asymmetric) and linear (half_pixel, PyTorch's bilinear) by hand") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "scales", {4}, {1, 1, 2, 2});
  auto* n = add_node(g, "Resize", {"x", "", "scales"}, {"y"});
  str_attr(n, "coordinate_transformation_mode", "asymmetric");
  str_attr(n, "nearest_mode", "floor");
  add_output(g, "y");
  check_f32(run_model(m, "resize_nearest.onnx", {{"x", Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4})}}, "y"), {1, 1, 4, 4},
            {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  // Width 2 -> 4 by sizes: x_orig = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to [0, 1]:
  // 1, 1.5, 2.5, 3 (torch.nn.functional.interpolate(mode="bilinear", align_corners=False)).
  auto l = model(13);
  auto* lg = l.mutable_graph();
  add_input(lg, "x", {1, 1, 1, 2});
  add_i64(lg, "sizes", {1, 1, 1, 4});
  str_attr(add_node(lg, "Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "linear");
  add_output(lg, "y");
  check_f32(run_model(l, "resize_linear.onnx", {{"x", Tensor::f32({1, 1, 1, 2}, {1, 3})}}, "y"), {1, 1, 1, 4},
            {1, 1.5f, 2.5f, 3});

  // Upsample (opset 9): nearest, asymmetric, floor.
  auto u = model(9);
  auto* ug = u.mutable_graph();
  add_input(ug, "x", {1, 1, 1, 2});
  add_f32(ug, "scales", {4}, {1, 1, 1, 3});
  add_node(ug, "Upsample", {"x", "scales"}, {"y"});
  add_output(ug, "y");
  check_f32(run_model(u, "upsample.onnx", {{"x", Tensor::f32({1, 1, 1, 2}, {7, 9})}}, "y"), {1, 1, 1, 6},
            {7, 7, 7, 9, 9, 9});

  // Scales computed at run time: a clear kUnsupported naming the node.
  auto d = model(13);
  auto* dg = d.mutable_graph();
  add_input(dg, "x", {1, 1, 2, 2});
  add_input(dg, "s", {4});
  add_node(dg, "Resize", {"x", "", "s"}, {"y"}, "up");
  add_output(dg, "y");
  auto r = load_onnx(save(d, "resize_dynamic.onnx"));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(has(r.status().message(), "'up'"));
  CHECK(has(r.status().message(), "scales"));
}

TEST_CASE("onnx import: ConvTranspose by hand (stride 2, stride 1 with pads and bias, groups)") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "w", {1, 1, 2, 2}, {1, 1, 1, 1});
  ints_attr(add_node(g, "ConvTranspose", {"x", "w"}, {"y"}), "strides", {2, 2});
  add_output(g, "y");
  const Tensor x = Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4});
  check_f32(run_model(m, "convt_s2.onnx", {{"x", x}}, "y"), {1, 1, 4, 4},
            {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  // Stride 1: every 2x2 window sums into a 3x3 map: [[1,3,2],[4,10,6],[3,7,4]]; pads 1 keep the
  // centre, + bias 0.5.
  auto p = model(13);
  auto* pg = p.mutable_graph();
  add_input(pg, "x", {1, 1, 2, 2});
  add_f32(pg, "w", {1, 1, 2, 2}, {1, 1, 1, 1});
  add_f32(pg, "b", {1}, {0.5f});
  add_node(pg, "ConvTranspose", {"x", "w", "b"}, {"full"});
  add_f32(pg, "w1", {1, 1, 2, 2}, {1, 1, 1, 1});
  ints_attr(add_node(pg, "ConvTranspose", {"x", "w1"}, {"centre"}), "pads", {1, 1, 0, 0});
  add_output(pg, "full");
  add_output(pg, "centre");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(p, "convt_s1.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", x}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("full"), {1, 1, 3, 3}, {1.5f, 3.5f, 2.5f, 4.5f, 10.5f, 6.5f, 3.5f, 7.5f, 4.5f});
  check_f32(r->at("centre"), {1, 1, 2, 2}, {10, 6, 7, 4});

  // Two groups of one channel: y_c = x_c * w_c.
  auto q = model(13);
  auto* qg = q.mutable_graph();
  add_input(qg, "x", {1, 2, 1, 1});
  add_f32(qg, "w", {2, 1, 1, 1}, {3, 5});
  int_attr(add_node(qg, "ConvTranspose", {"x", "w"}, {"y"}), "group", 2);
  add_output(qg, "y");
  check_f32(run_model(q, "convt_group.onnx", {{"x", Tensor::f32({1, 2, 1, 1}, {1, 2})}}, "y"), {1, 2, 1, 1}, {3, 10});
}

TEST_CASE("onnx import: ConstantOfShape and Range fold, even into a graph output; ReduceSum noop") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_i64(g, "shape", {2, 3});
  add_node(g, "ConstantOfShape", {"shape"}, {"twos"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    a.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a.mutable_t()->add_dims(1);
    a.mutable_t()->add_float_data(2.0f);
    return a;
  }());
  add_node(g, "Mul", {"x", "twos"}, {"y"});
  auto* start = g->add_initializer();
  start->set_name("start");
  start->set_data_type(onnx::TensorProto::INT64);
  start->add_int64_data(1);
  auto* limit = g->add_initializer();
  limit->CopyFrom(*start);
  limit->set_name("limit");
  limit->set_int64_data(0, 8);
  auto* delta = g->add_initializer();
  delta->CopyFrom(*start);
  delta->set_name("delta");
  delta->set_int64_data(0, 3);
  add_node(g, "Range", {"start", "limit", "delta"}, {"r"});
  // ReduceSum with an empty axes constant and noop_with_empty_axes: the identity (this aborted
  // in the CPU lowering before: the canonical `axes` attribute was missing).
  add_i64(g, "no_axes", {});
  int_attr(add_node(g, "ReduceSum", {"y", "no_axes"}, {"same"}), "noop_with_empty_axes", 1);
  add_output(g, "same");
  add_output(g, "r");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "generated.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("same"), {2, 3}, {2, 4, 6, 8, 10, 12});
  const Tensor& range = r->at("r");
  REQUIRE(range.dtype() == DType::kI64);
  REQUIRE(range.shape() == Shape{3});
  CHECK(range.i64()[0] == 1);
  CHECK(range.i64()[1] == 4);
  CHECK(range.i64()[2] == 7);
}

TEST_CASE("onnx import: opset 21 (Resize's half_pixel_symmetric of opset 19, Cast's saturate); opset 22 refused") {
  // Width 4 -> 2 by scale 0.6: in * scale = 2.4, so half_pixel is re-centred by
  // offset = 4 / 2 * (1 - 2 / 2.4) = 1/3: x_orig = 1/3 + (o + 0.5) / 0.6 - 0.5 = 2/3, 7/3;
  // linear on [1, 2, 3, 4]: 5/3, 10/3.
  auto m = model(21);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 1, 4});
  add_f32(g, "scales", {4}, {1, 1, 1, 0.6f});
  auto* n = add_node(g, "Resize", {"x", "", "scales"}, {"r"});
  str_attr(n, "mode", "linear");
  str_attr(n, "coordinate_transformation_mode", "half_pixel_symmetric");
  int_attr(add_node(g, "Cast", {"r"}, {"y"}), "to", 1);
  int_attr(g->mutable_node(1), "saturate", 1);
  add_output(g, "y");
  check_f32(run_model(m, "opset21.onnx", {{"x", Tensor::f32({1, 1, 1, 4}, {1, 2, 3, 4})}}, "y"), {1, 1, 1, 2},
            {5.0f / 3.0f, 10.0f / 3.0f});

  m.mutable_opset_import(0)->set_version(22);
  auto r = load_onnx(save(m, "opset22.onnx"));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(has(r.status().message(), "opset 22"));
}

TEST_CASE("onnx import: Conv then Clip with min > max gives max everywhere (no oneDNN post-op), NaN bounds run") {
  // oneDNN refuses a clip post-op with min > max (it aborted the load); ONNX says every value is max.
  for (float lo : {2.f, std::numeric_limits<float>::quiet_NaN()}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 1, 2, 2});
    add_f32(g, "w", {1, 1, 1, 1}, {1.f});
    add_f32(g, "lo", {}, {lo});
    add_f32(g, "hi", {}, {-1.f});
    add_node(g, "Conv", {"x", "w"}, {"c"}, "conv");
    add_node(g, "Clip", {"c", "lo", "hi"}, {"y"}, "clip");
    add_output(g, "y");
    Tensor x(DType::kF32, {1, 1, 2, 2});
    const std::vector<float> xv = {-3.f, 0.5f, 4.f, -0.5f};
    std::copy(xv.begin(), xv.end(), x.f32());
    const Tensor y = run_model(m, "conv_clip_inverted.onnx", {{"x", x}}, "y");
    if (!std::isnan(lo)) check_f32(y, {1, 1, 2, 2}, {-1.f, -1.f, -1.f, -1.f});
  }
}

TEST_CASE("onnx import: an op-table row is an ONNX op unless ops.def lists it internal") {
  // A node naming one of fusert's own ops (FakeQuantize: a pass makes it from QDQ pairs; Conv3D:
  // the importer's name for a 5-D Conv) is an unknown op to the importer, with the op's name.
  for (const char* op : {"FakeQuantize", "Conv3D", "QLinearAdd"}) {
    CAPTURE(op);
    auto m = model(17);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 2});
    add_node(g, op, {"x"}, {"y"});
    add_output(g, "y");
    auto s = Session::load(save(m, std::string("internal_") + op + ".onnx"), SessionOptions());
    REQUIRE_FALSE(s.ok());
    CHECK(has(s.status().message(), "op types:"));
    CHECK(has(s.status().message(), std::string(op) + " x1"));
  }
  // A row of graph/base/unary_ops.def imports as itself: Softsign(x) = x / (1 + |x|).
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3});
  add_node(g, "Softsign", {"x"}, {"y"});
  add_output(g, "y");
  check_f32(run_model(m, "softsign.onnx", {{"x", Tensor::f32({1, 3}, {-3, 0, 1})}}, "y"), {1, 3}, {-0.75f, 0.f, 0.5f});
}

TEST_CASE("onnx import: an empty first input, or an empty input of a variadic op, is an error naming the node") {
  // Each read value id -1 (a crash or a wrong allocation) before the check moved ahead of the rules.
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"Reshape", {"", "x"}}, {"Expand", {"", "x"}},      {"Squeeze", {"", "x"}},
      {"Softmax", {"", "x"}}, {"Concat", {"x", "", "x"}}, {"Sum", {"x", "", "x"}}};
  for (const auto& [op, ins] : cases) {
    CAPTURE(op);
    auto m = model(11);
    auto* g = m.mutable_graph();
    add_input(g, "x", {2, 3});
    auto* n = add_node(g, op, ins, {"y"});
    if (op == "Concat") int_attr(n, "axis", 0);
    add_output(g, "y");
    auto s = Session::load(save(m, "empty_" + op + ".onnx"), SessionOptions());
    REQUIRE_FALSE(s.ok());
    CHECK(has(s.status().message(), "is empty"));
    CHECK(has(s.status().message(), op));
  }
}
