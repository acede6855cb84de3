// ONNX's other elementwise functions (rows of graph/base/unary_ops.def: Elu ... Atanh) imported
// and run, against values computed by hand (Python's math module, double precision, rounded to
// float), attributes away from their defaults, NaN where ONNX keeps it and where it maps it to 0.
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

void float_attr(onnx::NodeProto* n, const std::string& name, float v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

Tensor run_unary(const std::string& op, const std::vector<float>& x,
                 const std::vector<std::pair<std::string, float>>& attrs, const char* fusion) {
  auto m = model(17);
  auto* g = m.mutable_graph();
  const int64_t n = static_cast<int64_t>(x.size());
  add_input(g, "x", {1, n});
  auto* node = add_node(g, op, {"x"}, {"y"});
  for (const auto& [k, v] : attrs) float_attr(node, k, v);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "unary_" + op + ".onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor::f32({1, n}, x)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y");
}

struct Case {
  std::string op;
  std::vector<std::pair<std::string, float>> attrs;
  std::vector<float> x, want;
};

}  // namespace

TEST_CASE("onnx import: Elu, Selu, Celu, ThresholdedRelu, Shrink, Softsign, Sign, rounding, trigonometry by hand") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-1.5f, -0.5f, 0.f, 0.5f, 1.f, 2.5f, nan};
  const std::vector<float> unit = {-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f};
  const std::vector<Case> cases = {
      {"Elu", {}, x, {-0.77686984f, -0.39346934f, 0.f, 0.5f, 1.f, 2.5f, nan}},
      {"Selu", {}, x, {-1.36581436f, -0.69175819f, 0.f, 0.525350511f, 1.05070102f, 2.62675256f, nan}},
      {"Celu", {{"alpha", 2.f}}, x, {-1.05526689f, -0.442398434f, 0.f, 0.5f, 1.f, 2.5f, nan}},
      {"ThresholdedRelu", {{"alpha", 0.75f}}, x, {0.f, 0.f, 0.f, 0.f, 1.f, 2.5f, 0.f}},
      {"Shrink", {{"lambd", 0.6f}, {"bias", 0.25f}}, x, {-1.25f, 0.f, 0.f, 0.f, 0.75f, 2.25f, 0.f}},
      {"Softsign", {}, x, {-0.6f, -0.333333333f, 0.f, 0.333333333f, 0.5f, 0.714285714f, nan}},
      {"Sign", {}, x, {-1.f, -1.f, 0.f, 1.f, 1.f, 1.f, nan}},
      {"Floor", {}, x, {-2.f, -1.f, 0.f, 0.f, 1.f, 2.f, nan}},
      {"Ceil", {}, x, {-1.f, 0.f, 0.f, 1.f, 1.f, 3.f, nan}},
      {"Round", {}, x, {-2.f, 0.f, 0.f, 0.f, 1.f, 2.f, nan}},  // halves to even
      {"Sin", {}, x, {-0.997494987f, -0.479425539f, 0.f, 0.479425539f, 0.841470985f, 0.598472144f, nan}},
      {"Cos", {}, x, {0.0707372017f, 0.877582562f, 1.f, 0.877582562f, 0.540302306f, -0.801143616f, nan}},
      {"Tan", {}, x, {-14.1014199f, -0.54630249f, 0.f, 0.54630249f, 1.55740772f, -0.747022297f, nan}},
      {"Atan", {}, x, {-0.982793723f, -0.463647609f, 0.f, 0.463647609f, 0.785398163f, 1.19028995f, nan}},
      {"Sinh", {}, x, {-2.12927946f, -0.521095305f, 0.f, 0.521095305f, 1.17520119f, 6.05020448f, nan}},
      {"Cosh", {}, x, {2.35240962f, 1.12762597f, 1.f, 1.12762597f, 1.54308063f, 6.13228948f, nan}},
      {"Asinh", {}, x, {-1.19476322f, -0.481211825f, 0.f, 0.481211825f, 0.881373587f, 1.64723115f, nan}},
      {"Asin", {}, unit, {-1.57079633f, -0.523598776f, 0.f, 0.523598776f, 1.57079633f, nan}},
      {"Acos", {}, unit, {3.14159265f, 2.0943951f, 1.57079633f, 1.04719755f, 0.f, nan}},
      {"Atanh", {}, {-0.5f, 0.f, 0.5f, 1.5f}, {-0.549306144f, 0.f, 0.549306144f, nan}},
      {"Acosh", {}, {1.f, 1.5f, 2.5f, 10.f, 0.5f}, {0.f, 0.96242365f, 1.56679924f, 2.99322285f, nan}},
  };
  for (const char* fusion : {"none", "all"}) {
    for (const Case& c : cases) {
      CAPTURE(c.op);
      CAPTURE(fusion);
      const Tensor y = run_unary(c.op, c.x, c.attrs, fusion);
      REQUIRE(y.shape() == Shape{1, static_cast<int64_t>(c.want.size())});
      for (size_t i = 0; i < c.want.size(); ++i) {
        CAPTURE(i);
        if (std::isnan(c.want[i]))
          CHECK(std::isnan(y.f32()[i]));
        else
          CHECK(y.f32()[i] == doctest::Approx(c.want[i]).epsilon(1e-6).scale(1e-6));
      }
    }
  }
}

TEST_CASE("onnx import: a new elementwise function is an epilogue step of a Conv (fused with its anchor)") {
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "w", {1, 1, 1, 1}, {2.f});
  add_node(g, "Conv", {"x", "w"}, {"c"});
  add_node(g, "Softsign", {"c"}, {"s"});
  add_node(g, "Elu", {"s"}, {"y"});
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "conv_softsign_elu.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK((*s)->stats().kernels == 1);  // Conv + Softsign + Elu in one kernel
  auto y = (*s)->run({{"x", Tensor::f32({1, 1, 2, 2}, {-1.f, 0.f, 0.5f, 1.f})}});
  REQUIRE(y.ok());
  // 2x -> x / (1 + |x|) -> Elu: [-2 -> -2/3 -> e^(-2/3) - 1, 0, 1 -> 0.5, 2 -> 2/3]
  check_f32(y->at("y"), {1, 1, 2, 2}, {-0.486582881f, 0.f, 0.5f, 0.666666667f});
}
