// Integer arithmetic at run time (ONNX Add, Sub, Mul, Div, Pow, Neg on i32 / i64 inputs, imported
// as IntegerArithmetic), Mod (fmod 0 and 1, integers and f32) and Pow of mixed dtypes, against
// values worked out by hand: truncating division, Python's and C's remainder signs, wrapping on
// overflow, numpy broadcasting, and the errors for a divisor 0 or a negative integer exponent.
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

int elem_of(DType t) {
  return t == DType::kI32   ? onnx::TensorProto::INT32
         : t == DType::kI64 ? onnx::TensorProto::INT64
                            : onnx::TensorProto::FLOAT;
}

Tensor ints(DType t, const Shape& s, const std::vector<int64_t>& v) {
  Tensor x(t, s);
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::kI32)
      static_cast<int32_t*>(x.raw())[i] = static_cast<int32_t>(v[i]);
    else
      x.i64()[i] = v[i];
  }
  return x;
}

std::vector<int64_t> values(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.dtype() == DType::kI32 ? static_cast<const int32_t*>(t.raw())[i] : t.i64()[i]);
  return v;
}

// `op` on run-time inputs a (and b); attribute fmod when >= 0.
Result<TensorMap> run_op(const std::string& op, const Tensor& a, const Tensor* b, int fmod = -1,
                         const char* fusion = "all") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "a", a.shape(), "", -1, elem_of(a.dtype()));
  std::vector<std::string> ins = {"a"};
  if (b) {
    add_input(g, "b", b->shape(), "", -1, elem_of(b->dtype()));
    ins.push_back("b");
  }
  auto* n = add_node(g, op, ins, {"y"}, "op0");
  if (fmod >= 0) int_attr(n, "fmod", fmod);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "integer.onnx"), opt);
  if (!s.ok()) return s.status();
  TensorMap in = {{"a", a}};
  if (b) in["b"] = *b;
  return (*s)->run(in);
}

Tensor run_ok(const std::string& op, const Tensor& a, const Tensor* b, int fmod = -1) {
  auto y = run_op(op, a, b, fmod);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y").clone();
}

}  // namespace

TEST_CASE("onnx import: integer arithmetic at run time by hand") {
  for (DType t : {DType::kI64, DType::kI32}) {
    CAPTURE(dtype_name(t));
    const Tensor a = ints(t, {3}, {7, -7, 5}), b = ints(t, {3}, {2, 2, -3});
    CHECK(values(run_ok("Add", a, &b)) == std::vector<int64_t>{9, -5, 2});
    CHECK(values(run_ok("Sub", a, &b)) == std::vector<int64_t>{5, -9, 8});
    CHECK(values(run_ok("Mul", a, &b)) == std::vector<int64_t>{14, -14, -15});
    CHECK(values(run_ok("Div", a, &b)) == std::vector<int64_t>{3, -3, -1});  // toward 0
    const Tensor y = run_ok("Neg", a, nullptr);
    CHECK(y.dtype() == t);
    CHECK(values(y) == std::vector<int64_t>{-7, 7, -5});
    const Tensor base = ints(t, {2, 1}, {2, -3}), e = ints(t, {3}, {0, 1, 5});  // broadcast to [2, 3]
    const Tensor p = run_ok("Pow", base, &e);
    CHECK(p.shape() == Shape{2, 3});
    CHECK(values(p) == std::vector<int64_t>{1, 2, 32, 1, -3, -243});
  }
  // i32 wraps as numpy does: max + 1 is min, min / -1 is min.
  const int64_t max32 = std::numeric_limits<int32_t>::max(), min32 = std::numeric_limits<int32_t>::min();
  const Tensor m = ints(DType::kI32, {2}, {max32, min32}), one = ints(DType::kI32, {2}, {1, -1});
  CHECK(values(run_ok("Add", m, &one)) == std::vector<int64_t>{min32, max32});
  CHECK(values(run_ok("Div", m, &one)) == std::vector<int64_t>{max32, min32});
}

TEST_CASE("onnx import: Mod by hand") {
  for (DType t : {DType::kI64, DType::kI32}) {
    const Tensor a = ints(t, {4}, {-4, 7, 5, -7}), b = ints(t, {4}, {3, -3, 3, -3});
    CHECK(values(run_ok("Mod", a, &b, 0)) == std::vector<int64_t>{2, -2, 2, -1});  // the divisor's sign
    CHECK(values(run_ok("Mod", a, &b, 1)) == std::vector<int64_t>{-1, 1, 2, -1});  // the dividend's
  }
  const Tensor a = Tensor::f32({3}, {-4.5f, 7.5f, 1}), b = Tensor::f32({3}, {2, -2, 0});
  const Tensor y = run_ok("Mod", a, &b, 1);
  check_f32(y, {3}, {-0.5f, 1.5f, std::numeric_limits<float>::quiet_NaN()});
  auto bad = run_op("Mod", a, &b, 0);
  REQUIRE_FALSE(bad.ok());
  CHECK(has(bad.status().message(), "fmod 0 on f32"));
}

TEST_CASE("onnx import: Pow of mixed dtypes") {
  const Tensor x = Tensor::f32({2}, {2, 3}), e = ints(DType::kI64, {2}, {3, 2});
  check_f32(run_ok("Pow", x, &e), {2}, {8, 9});
  const Tensor xi = ints(DType::kI64, {3}, {4, 9, 10}), ef = Tensor::f32({3}, {0.5f, 0.5f, -1});
  const Tensor y = run_ok("Pow", xi, &ef);  // in f32, truncated back to i64: 2, 3, 0.1 -> 0
  CHECK(y.dtype() == DType::kI64);
  CHECK(values(y) == std::vector<int64_t>{2, 3, 0});
}

TEST_CASE("onnx import: integer division by zero and negative integer exponents are errors") {
  const Tensor a = ints(DType::kI64, {2}, {1, 2}), z = ints(DType::kI64, {2}, {1, 0});
  for (const char* op : {"Div", "Mod"}) {
    auto y = run_op(op, a, &z);
    REQUIRE_FALSE(y.ok());
    CHECK(has(y.status().message(), "divisor 0 at position 1 of 'b'"));
  }
  const Tensor neg = ints(DType::kI32, {2}, {-1, 2}), a32 = ints(DType::kI32, {2}, {2, 2});
  auto y = run_op("Pow", a32, &neg);
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "exponent -1 at position 0"));
}
