// ONNX InstanceNormalization (PyTorch exports GroupNorm through it) imported and run, against
// values worked out by hand: per-plane mean and population variance, per-channel scale and bias,
// epsilon, a large mean next to a small spread, a constant plane, 3-D and 4-D inputs.
#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

Tensor run_in(const Shape& xs, const std::vector<float>& x, const std::vector<float>& scale,
              const std::vector<float>& bias, float eps, const char* fusion) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", xs);
  add_f32(g, "s", {static_cast<int64_t>(scale.size())}, scale);
  add_f32(g, "b", {static_cast<int64_t>(bias.size())}, bias);
  auto* n = add_node(g, "InstanceNormalization", {"x", "s", "b"}, {"y"}, "in0");
  auto* a = n->add_attribute();
  a->set_name("epsilon");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(eps);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "instance_norm.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor::f32(xs, x)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y").clone();
}

}  // namespace

TEST_CASE("onnx import: InstanceNormalization by hand") {
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    // Channel 0 [1, 3, 1, 3]: mean 2, var 1, eps 1 -> (x - 2) / sqrt 2, * 2 + 1.
    // Channel 1 [0, 0, 0, 4]: mean 1, var 3, eps 1 -> (x - 1) / 2, * 0.5 - 1.
    const std::vector<float> want = {-0.414213562f, 2.41421356f, -0.414213562f, 2.41421356f,
                                     -1.25f,        -1.25f,      -1.25f,        -0.25f};
    check_f32(run_in({1, 2, 4}, {1, 3, 1, 3, 0, 0, 0, 4}, {2, 0.5f}, {1, -1}, 1.f, fusion), {1, 2, 4}, want);
    check_f32(run_in({1, 2, 2, 2}, {1, 3, 1, 3, 0, 0, 0, 4}, {2, 0.5f}, {1, -1}, 1.f, fusion), {1, 2, 2, 2}, want);
    // A mean of 10002 next to a spread of 1: the same as channel 0.
    check_f32(run_in({1, 1, 4}, {10001, 10003, 10001, 10003}, {2}, {1}, 1.f, fusion), {1, 1, 4},
              {-0.414213562f, 2.41421356f, -0.414213562f, 2.41421356f});
    // A constant plane normalises to 0: the bias. Two images, each its own statistics.
    check_f32(run_in({2, 1, 2}, {5, 5, 1, 3}, {3}, {0.25f}, 1e-5f, fusion), {2, 1, 2},
              {0.25f, 0.25f, 0.25f - 2.999985f, 0.25f + 2.999985f});
  }
}
