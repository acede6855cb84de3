// ONNX's reductions beyond Sum/Mean/Max/Min (ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare,
// ReduceLogSum, ReduceLogSumExp) imported and run, against values computed by hand (Python's
// math module, double precision): axes as attribute (opset 13) and as input (opset 18), keepdims,
// all axes, a log of a negative sum (NaN), and log-sum-exp of values whose exp overflows float.
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

// y = op(x) over `axes` (none: all axes), x of shape `xs`, opset 13 (attribute) or 18 (input).
Tensor run_reduce(const std::string& op, int64_t opset, const Shape& xs, const std::vector<float>& x,
                  const std::vector<int64_t>& axes, int64_t keepdims, const char* fusion) {
  auto m = model(opset);
  auto* g = m.mutable_graph();
  add_input(g, "x", xs);
  std::vector<std::string> ins = {"x"};
  if (opset >= 18 && !axes.empty()) {
    add_i64(g, "axes", axes);
    ins.push_back("axes");
  }
  auto* n = add_node(g, op, ins, {"y"}, "r");
  if (opset < 18 && !axes.empty()) ints_attr(n, "axes", axes);
  int_attr(n, "keepdims", keepdims);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, op + std::to_string(opset) + ".onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor::f32(xs, x)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y");
}

struct Case {
  std::string op;
  std::vector<int64_t> axes;
  int64_t keepdims;
  Shape out;
  std::vector<float> want;
};

}  // namespace

TEST_CASE("onnx import: ReduceProd, ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp by hand") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {1, -2, 3, -4, 5, -6};  // [[1, -2, 3], [-4, 5, -6]]
  const std::vector<Case> cases = {
      {"ReduceProd", {}, 0, {}, {-720.f}},
      {"ReduceProd", {0}, 1, {1, 3}, {-4.f, -10.f, -18.f}},
      {"ReduceL1", {1}, 0, {2}, {6.f, 15.f}},
      {"ReduceL1", {}, 1, {1, 1}, {21.f}},
      {"ReduceL2", {1}, 0, {2}, {3.74165739f, 8.77496439f}},
      {"ReduceL2", {-2, -1}, 0, {}, {9.53939201f}},  // sqrt(91)
      {"ReduceSumSquare", {0}, 0, {3}, {17.f, 29.f, 45.f}},
      {"ReduceLogSum", {1}, 1, {2, 1}, {0.693147181f, nan}},  // log 2, log -5
      {"ReduceLogSumExp", {1}, 0, {2}, {3.13284523f, 5.00014010f}},
  };
  for (int64_t opset : {13, 18}) {
    for (const char* fusion : {"none", "all"}) {
      for (const Case& c : cases) {
        CAPTURE(c.op);
        CAPTURE(opset);
        CAPTURE(fusion);
        check_f32(run_reduce(c.op, opset, {2, 3}, x, c.axes, c.keepdims, fusion), c.out, c.want);
      }
    }
  }
}

TEST_CASE("onnx import: ReduceLogSumExp of values whose exp overflows float, and of -inf") {
  const float inf = std::numeric_limits<float>::infinity();
  // Row 0: log(2 e^1000) = 1000 + log 2; row 1: all -inf gives -inf; row 2: a +inf gives +inf.
  const Tensor y = run_reduce("ReduceLogSumExp", 13, {3, 2}, {1000.f, 1000.f, -inf, -inf, 1.f, inf}, {1}, 0, "all");
  check_f32(y, {3}, {1000.69315f});
  CHECK(y.f32()[1] == -inf);
  CHECK(y.f32()[2] == inf);
  // A NaN anywhere in the window gives NaN (numpy's logaddexp.reduce).
  const Tensor z = run_reduce("ReduceLogSumExp", 13, {1, 3}, {1.f, std::nanf(""), inf}, {1}, 0, "none");
  CHECK(std::isnan(z.f32()[0]));
}
