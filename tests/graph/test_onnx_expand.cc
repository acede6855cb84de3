// ONNX nodes imported as the nodes they are made of (graph/onnx/onnx_expand.cc) and opsets 1-6,
// against values worked out by hand: the broadcast attribute of opset < 7 arithmetic (B aligned
// at `axis`), GlobalMaxPool, IsNaN, IsInf (both signs, one, none), MeanVarianceNormalization,
// EyeLike (folded; diagonals above and below, dtype).
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

Result<TensorMap> run_graph(const onnx::ModelProto& m, const TensorMap& in, const char* fusion = "all") {
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "expand.onnx"), opt);
  if (!s.ok()) return s.status();
  return (*s)->run(in);
}

Tensor one_output(const onnx::ModelProto& m, const TensorMap& in, const char* fusion) {
  auto y = run_graph(m, in, fusion);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y").clone();
}

std::vector<uint8_t> bools(const Tensor& t) {
  REQUIRE(t.dtype() == DType::kBool);
  const auto* p = static_cast<const uint8_t*>(t.raw());
  return std::vector<uint8_t>(p, p + t.numel());
}

}  // namespace

TEST_CASE("onnx import: opset 6 broadcast attribute aligns B at axis") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto m = model(6);
    auto* g = m.mutable_graph();
    add_input(g, "a", {2, 3, 2});
    add_f32(g, "b", {3}, {10, 20, 30});
    auto* n = add_node(g, "Add", {"a", "b"}, {"y"}, "add");
    int_attr(n, "broadcast", 1);
    int_attr(n, "axis", 1);
    add_output(g, "y");
    std::vector<float> a(12, 1.f);
    check_f32(one_output(m, {{"a", Tensor::f32({2, 3, 2}, a)}}, fusion), {2, 3, 2},
              {11, 11, 21, 21, 31, 31, 11, 11, 21, 21, 31, 31});
    // Without axis: B aligned with A's last dims, as numpy.
    auto m2 = model(5);
    auto* g2 = m2.mutable_graph();
    add_input(g2, "a", {2, 2});
    add_f32(g2, "b", {2}, {1, 2});
    int_attr(add_node(g2, "Mul", {"a", "b"}, {"y"}, "mul"), "broadcast", 1);
    add_output(g2, "y");
    check_f32(one_output(m2, {{"a", Tensor::f32({2, 2}, {3, 4, 5, 6})}}, fusion), {2, 2}, {3, 8, 5, 12});
  }
  // broadcast 0 with different shapes is an error, not a numpy broadcast.
  auto m = model(6);
  auto* g = m.mutable_graph();
  add_input(g, "a", {2, 2});
  add_f32(g, "b", {2}, {1, 2});
  int_attr(add_node(g, "Add", {"a", "b"}, {"y"}, "add"), "broadcast", 0);
  add_output(g, "y");
  auto y = run_graph(m, {{"a", Tensor::f32({2, 2}, {1, 2, 3, 4})}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "without broadcast = 1"));
}

TEST_CASE("onnx import: GlobalMaxPool, IsNaN, IsInf, MeanVarianceNormalization, EyeLike by hand") {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    {
      auto m = model(1);
      auto* g = m.mutable_graph();
      add_input(g, "x", {1, 2, 2, 2});
      add_node(g, "GlobalMaxPool", {"x"}, {"y"}, "gmp");
      add_output(g, "y");
      check_f32(one_output(m, {{"x", Tensor::f32({1, 2, 2, 2}, {1, 5, -2, 3, -1, -7, -3, -4})}}, fusion), {1, 2, 1, 1},
                {5, -1});
    }
    const Tensor x = Tensor::f32({5}, {1, nan, inf, -inf, 0});
    {
      auto m = model(13);
      auto* g = m.mutable_graph();
      add_input(g, "x", {5});
      add_node(g, "IsNaN", {"x"}, {"y"}, "isnan");
      add_output(g, "y");
      CHECK(bools(one_output(m, {{"x", x}}, fusion)) == std::vector<uint8_t>{0, 1, 0, 0, 0});
    }
    for (int pos : {-1, 0, 1}) {
      for (int neg : {-1, 0, 1}) {
        auto m = model(10);
        auto* g = m.mutable_graph();
        add_input(g, "x", {5});
        auto* n = add_node(g, "IsInf", {"x"}, {"y"}, "isinf");
        if (pos >= 0) int_attr(n, "detect_positive", pos);
        if (neg >= 0) int_attr(n, "detect_negative", neg);
        add_output(g, "y");
        const uint8_t p = pos != 0, q = neg != 0;
        CHECK(bools(one_output(m, {{"x", x}}, fusion)) == std::vector<uint8_t>{0, 0, p, q, 0});
      }
    }
    {
      auto m = model(13);
      auto* g = m.mutable_graph();
      add_input(g, "x", {1, 1, 1, 4});
      add_node(g, "MeanVarianceNormalization", {"x"}, {"y"}, "mvn");
      add_output(g, "y");
      // Mean 2.5, variance 1.25: (x - 2.5) / sqrt(1.25).
      const float sd = std::sqrt(1.25f);
      check_f32(one_output(m, {{"x", Tensor::f32({1, 1, 1, 4}, {1, 2, 3, 4})}}, fusion), {1, 1, 1, 4},
                {-1.5f / sd, -0.5f / sd, 0.5f / sd, 1.5f / sd});
    }
    {
      auto m = model(13);
      auto* g = m.mutable_graph();
      add_input(g, "x", {3, 4});
      auto* n = add_node(g, "EyeLike", {"x"}, {"y"}, "eye");
      int_attr(n, "k", 1);
      add_output(g, "y");
      check_f32(one_output(m, {{"x", Tensor::f32({3, 4}, std::vector<float>(12, 7.f))}}, fusion), {3, 4},
                {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1});
      n->mutable_attribute(0)->set_i(-2);
      int_attr(n, "dtype", onnx::TensorProto::INT64);
      const Tensor e = one_output(m, {{"x", Tensor::f32({3, 4}, std::vector<float>(12, 7.f))}}, fusion);
      REQUIRE(e.dtype() == DType::kI64);
      CHECK(std::vector<int64_t>(e.i64(), e.i64() + 12) == std::vector<int64_t>{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0});
    }
  }
}

namespace {

// A branch graph: y = x * c (c its own initializer, [1]).
onnx::GraphProto branch(const std::string& tag, float c) {
  onnx::GraphProto b;
  b.set_name(tag);
  add_f32(&b, "c", {1}, {c});
  add_node(&b, "Mul", {"x", "c"}, {"y"}, "mul");  // "y" and "c" shadow nothing outside: renamed
  add_output(&b, "y");
  return b;
}

onnx::ModelProto if_model(bool constant_cond, bool cond_value, const onnx::GraphProto& t, const onnx::GraphProto& e) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {3});
  if (constant_cond) {
    auto* c = g->add_initializer();
    c->set_name("cond");
    c->set_data_type(onnx::TensorProto::BOOL);
    c->add_int32_data(cond_value ? 1 : 0);
  } else {
    add_input(g, "cond", {1}, "", -1, onnx::TensorProto::BOOL);
  }
  auto* n = add_node(g, "If", {"cond"}, {"y"}, "if0");
  for (const auto& [name, gp] :
       {std::pair<const char*, const onnx::GraphProto*>{"then_branch", &t}, {"else_branch", &e}}) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    *a->mutable_g() = *gp;
  }
  add_output(g, "y");
  return m;
}

Tensor bool_tensor(bool v) {
  Tensor t(DType::kBool, {1});
  static_cast<uint8_t*>(t.raw())[0] = v ? 1 : 0;
  return t;
}

}  // namespace

TEST_CASE("onnx import: If with a constant condition inlines its branch, with a run-time one selects") {
  const Tensor x = Tensor::f32({3}, {1, 2, 3});
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    for (bool c : {true, false}) {
      check_f32(one_output(if_model(true, c, branch("t", 2), branch("e", -1)), {{"x", x}}, fusion), {3},
                c ? std::vector<float>{2, 4, 6} : std::vector<float>{-1, -2, -3});
      const onnx::ModelProto m = if_model(false, false, branch("t", 2), branch("e", -1));
      check_f32(one_output(m, {{"x", x}, {"cond", bool_tensor(c)}}, fusion), {3},
                c ? std::vector<float>{2, 4, 6} : std::vector<float>{-1, -2, -3});
    }
    // A nested If in the then branch, reading the outer x and its own branch's value.
    onnx::GraphProto outer_then;
    add_f32(&outer_then, "k", {1}, {10});
    add_node(&outer_then, "Add", {"x", "k"}, {"xk"}, "add");
    auto* c = outer_then.add_initializer();
    c->set_name("inner_cond");
    c->set_data_type(onnx::TensorProto::BOOL);
    c->add_int32_data(1);
    onnx::GraphProto inner_then;
    add_node(&inner_then, "Neg", {"xk"}, {"z"}, "neg");
    add_output(&inner_then, "z");
    auto* inner = add_node(&outer_then, "If", {"inner_cond"}, {"w"}, "if_inner");
    for (const char* name : {"then_branch", "else_branch"}) {
      auto* a = inner->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::GRAPH);
      *a->mutable_g() = inner_then;
    }
    add_output(&outer_then, "w");
    const onnx::ModelProto nested = if_model(false, false, outer_then, branch("e", 0));
    check_f32(one_output(nested, {{"x", x}, {"cond", bool_tensor(true)}}, fusion), {3}, {-11, -12, -13});
  }
}

TEST_CASE("onnx import: a run-time If runs only the branch taken, between stages (the other may be invalid)") {
  // The else branch reshapes x [3] to [2, 2]: no valid shapes at this size, as silero_vad.onnx's
  // 8 kHz branch at a 16 kHz chunk. Loading works; a run taking it fails naming the branch.
  onnx::GraphProto bad;
  add_i64(&bad, "s", {2, 2});
  add_node(&bad, "Reshape", {"x", "s"}, {"y"}, "reshape");
  add_output(&bad, "y");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(if_model(false, false, branch("t", 3), bad), "if_lazy.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK(s->get()->stats().execution_stages == 2);
  CHECK(has(s->get()->explain(), "on the host: If 'if0'"));
  const Tensor x = Tensor::f32({3}, {1, 2, 3});
  auto y = (*s)->run({{"x", x}, {"cond", bool_tensor(true)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {3}, {3, 6, 9});
  y = (*s)->run({{"x", x}, {"cond", bool_tensor(false)}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "If 'if0' else_branch"));
  y = (*s)->run({{"x", Tensor::f32({3}, {4, 5, 6})}, {"cond", bool_tensor(true)}});  // the branch's session kept
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {3}, {12, 15, 18});
}

TEST_CASE("onnx import: a run-time If whose branches differ in shape is refused, naming both") {
  onnx::GraphProto two;
  add_f32(&two, "c", {2}, {1, 2});
  add_node(&two, "Identity", {"c"}, {"y"}, "id");
  add_output(&two, "y");
  auto y = run_graph(if_model(false, false, branch("t", 2), two), {});
  REQUIRE_FALSE(y.ok());
  CHECK(y.status().code() == StatusCode::kUnsupported);
  CHECK(has(y.status().message(), "the branches give"));
  // An unsupported op inside a branch is listed with the others before anything is imported.
  onnx::GraphProto bad;
  add_node(&bad, "BitShift", {"x", "x"}, {"y"}, "bs");
  add_output(&bad, "y");
  y = run_graph(if_model(false, false, bad, branch("e", 1)), {});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "BitShift x1 (if0/bs)"));
}

TEST_CASE("onnx import: GlobalMaxPool of rank 2 and IsNaN of integers are errors") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_node(g, "GlobalMaxPool", {"x"}, {"y"}, "gmp");
  add_output(g, "y");
  auto y = run_graph(m, {{"x", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "must be [N, C, d1, ...]"));
  auto n = model(13);
  auto* h = n.mutable_graph();
  add_input(h, "x", {2}, "", -1, onnx::TensorProto::INT64);
  add_node(h, "IsNaN", {"x"}, {"y"}, "isnan");
  add_output(h, "y");
  y = run_graph(n, {});
  REQUIRE_FALSE(y.ok());
  CHECK(y.status().code() == StatusCode::kUnsupported);
}

TEST_CASE("onnx import: window functions (folded) and LRN by hand") {
  const auto window = [](const char* op, int64_t size, int periodic) {
    auto m = model(17);
    auto* g = m.mutable_graph();
    add_i64(g, "size", {size});
    g->mutable_initializer(0)->clear_dims();  // a scalar
    int_attr(add_node(g, op, {"size"}, {"y"}, "w"), "periodic", periodic);
    add_output(g, "y");
    return one_output(m, {}, "all");
  };
  check_f32(window("HannWindow", 4, 1), {4}, {0, 0.5f, 1, 0.5f});  // 0.5 - 0.5 cos(2 pi n / 4)
  check_f32(window("HannWindow", 3, 0), {3}, {0, 1, 0});           // N = size - 1 = 2
  check_f32(window("HammingWindow", 2, 1), {2}, {4.f / 46, 1});    // 25/46 - 21/46 cos(pi n)
  check_f32(window("BlackmanWindow", 2, 1), {2}, {0.42f - 0.5f + 0.08f, 1});
  check_f32(window("HannWindow", 1, 0), {1}, {std::numeric_limits<float>::quiet_NaN()});  // 0 / 0, as ORT
  for (const char* fusion : {"none", "all"}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 2, 1, 1});
    auto* n = add_node(g, "LRN", {"x"}, {"y"}, "lrn");
    int_attr(n, "size", 2);
    for (const char* a : {"alpha", "beta", "bias"}) {
      auto* f = n->add_attribute();
      f->set_name(a);
      f->set_type(onnx::AttributeProto::FLOAT);
      f->set_f(1.f);
    }
    add_output(g, "y");
    // Channel 0 sums channels 0..1 (1 + 4), channel 1 sums 1..1 (4): 1 / (1 + 5/2), 2 / (1 + 4/2).
    check_f32(one_output(m, {{"x", Tensor::f32({1, 2, 1, 1}, {1, 2})}}, fusion), {1, 2, 1, 1}, {1 / 3.5f, 2 / 3.f});
  }
}

TEST_CASE("onnx import: a float64 model runs in float32 with f64_as_f32, else names the option") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2}, "", -1, onnx::TensorProto::DOUBLE);
  add_f32(g, "c", {2}, {0.5f, -1});
  auto* cast = add_node(g, "Cast", {"c"}, {"c64"}, "cast");
  int_attr(cast, "to", onnx::TensorProto::DOUBLE);
  add_node(g, "Mul", {"x", "c64"}, {"y"}, "mul");
  add_output(g, "y");
  const std::string path = save(m, "f64.onnx");
  SessionOptions opt;
  opt.threads = 1;
  auto refused = Session::load(path, opt);
  REQUIRE_FALSE(refused.ok());
  CHECK(has(refused.status().message(), "input 'x' is double"));
  CHECK(has(refused.status().message(), "f64_as_f32"));
  opt.f64_as_f32 = true;
  auto s = Session::load(path, opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK((*s)->inputs()[0].dtype == DType::kF32);
  auto y = (*s)->run({{"x", Tensor::f32({2}, {4, 3})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {2}, {2, -3});
}

namespace {

// Loop(M, cond, y): y_out = y_in + x * (i + 1) each iteration i, scanned. The trip count is an
// initializer (`constant_m`) or a graph input; the body's condition passes through, or is a Not.
onnx::ModelProto loop_model(bool constant_m, bool computed_cond) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_f32(g, "y0", {2}, {0, 0});
  if (constant_m) {
    add_i64(g, "M", {3});
    g->mutable_initializer(1)->clear_dims();
  } else {
    add_input(g, "M", {1}, "", -1, onnx::TensorProto::INT64);
  }
  onnx::GraphProto body;
  add_input(&body, "i", {}, "", -1, onnx::TensorProto::INT64);
  add_input(&body, "c", {}, "", -1, onnx::TensorProto::BOOL);
  add_input(&body, "y_in", {2});
  add_i64(&body, "one", {1});
  body.mutable_initializer(0)->clear_dims();
  add_node(&body, "Add", {"i", "one"}, {"i1"}, "inc");
  int_attr(add_node(&body, "Cast", {"i1"}, {"f"}, "cast"), "to", onnx::TensorProto::FLOAT);
  add_node(&body, "Mul", {"x", "f"}, {"xf"}, "mul");
  add_node(&body, "Add", {"y_in", "xf"}, {"y_out"}, "acc");
  add_node(&body, computed_cond ? "Not" : "Identity", {"c"}, {"c_out"}, "cond");
  add_node(&body, "Identity", {"y_out"}, {"scan"}, "scan");
  for (const char* o : {"c_out", "y_out", "scan"}) add_output(&body, o);
  auto* loop = add_node(g, "Loop", {"M", "", "y0"}, {"y", "ys"}, "loop");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = body;
  add_output(g, "y");
  add_output(g, "ys");
  return m;
}

}  // namespace

TEST_CASE("onnx import: Loop with a constant trip count unrolls; a run-time one runs between stages") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    auto y = run_graph(loop_model(true, false), {{"x", Tensor::f32({2}, {1, 10})}}, fusion);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    // y after i = 0, 1, 2: x, 3x, 6x.
    check_f32(y->at("y"), {2}, {6, 60});
    check_f32(y->at("ys"), {3, 2}, {1, 10, 3, 30, 6, 60});
  }
  // M an input: the op Loop, its body a session run once per iteration; M = 0 returns y0 and an
  // empty scan [0, 2].
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(loop_model(false, false), "loop_rt.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK(has((*s)->explain(), "on the host: Loop 'loop'"));
  CHECK(has((*s)->explain(), "iteration count is dim 'loop.n'"));
  const Tensor x = Tensor::f32({2}, {1, 10});
  Tensor m(DType::kI64, {1});
  for (int64_t trips : {4, 0, 2}) {
    CAPTURE(trips);
    m.i64()[0] = trips;
    auto y = (*s)->run({{"x", x}, {"M", m.clone()}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    if (trips == 4) {
      check_f32(y->at("y"), {2}, {10, 100});  // x (1 + 2 + 3 + 4)
      check_f32(y->at("ys"), {4, 2}, {1, 10, 3, 30, 6, 60, 10, 100});
    } else if (trips == 0) {
      check_f32(y->at("y"), {2}, {0, 0});
      CHECK(y->at("ys").shape() == Shape{0, 2});
    } else {
      check_f32(y->at("ys"), {2, 2}, {1, 10, 3, 30});
    }
  }
  // A body that computes its condition (Not of the one it is given): one iteration, then false.
  auto y = run_graph(loop_model(true, true), {{"x", Tensor::f32({2}, {2, 5})}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {2}, {2, 5});
  check_f32(y->at("ys"), {1, 2}, {2, 5});
}

TEST_CASE("onnx import: a run-time Loop whose body changes a carried value's shape is refused, naming it") {
  auto m = loop_model(false, false);
  onnx::GraphProto* body = m.mutable_graph()->mutable_node(0)->mutable_attribute(0)->mutable_g();
  for (auto& n : *body->mutable_node()) {  // y_out = Concat(y_in, xf): [4], not [2]
    if (n.name() != "acc") continue;
    n.set_op_type("Concat");
    int_attr(&n, "axis", 0);
  }
  auto r = run_graph(m, {{"x", Tensor::f32({2}, {1, 10})}});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK_MESSAGE(has(r.status().message(), "carried value 0 ('y0') enters the body as f32 [2] and leaves it as f32 [4]"),
                r.status().message());
}
