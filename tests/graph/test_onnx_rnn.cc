// ONNX RNN by hand (the recurrences' attributes are checked against ONNX Runtime by ctest
// onnx_ort_cases, tools/ort_cases.py): a one-unit Relu recurrence worked out step by step, and
// the errors for a sequence length outside [0, S] and an unknown activation.
#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

onnx::ModelProto relu_rnn(const char* activation) {
  auto m = model(14);
  auto* g = m.mutable_graph();
  add_input(g, "x", {3, 1, 1});
  add_input(g, "lens", {1}, "", -1, onnx::TensorProto::INT32);
  add_f32(g, "w", {1, 1, 1}, {2});
  add_f32(g, "r", {1, 1, 1}, {0.5f});
  auto* n = add_node(g, "RNN", {"x", "w", "r", "", "lens"}, {"y", "y_h"}, "rnn");
  int_attr(n, "hidden_size", 1);
  auto* a = n->add_attribute();
  a->set_name("activations");
  a->set_type(onnx::AttributeProto::STRINGS);
  a->add_strings(activation);
  add_output(g, "y");
  add_output(g, "y_h");
  return m;
}

Tensor lens(int32_t v) {
  Tensor t(DType::kI32, {1});
  static_cast<int32_t*>(t.raw())[0] = v;
  return t;
}

}  // namespace

TEST_CASE("onnx import: RNN by hand") {
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(relu_rnn("Relu"), "rnn.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const Tensor x = Tensor::f32({3, 1, 1}, {1, 2, 3});
  // h1 = relu(2 * 1) = 2, h2 = relu(2 * 2 + 0.5 * 2) = 5, h3 = relu(2 * 3 + 0.5 * 5) = 8.5.
  auto y = (*s)->run({{"x", x}, {"lens", lens(3)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {3, 1, 1, 1}, {2, 5, 8.5f});
  check_f32(y->at("y_h"), {1, 1, 1}, {8.5f});
  // Length 2: the third step writes 0 and the state stays h2.
  y = (*s)->run({{"x", x}, {"lens", lens(2)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  check_f32(y->at("y"), {3, 1, 1, 1}, {2, 5, 0});
  check_f32(y->at("y_h"), {1, 1, 1}, {5});
  y = (*s)->run({{"x", x}, {"lens", lens(4)}});
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "length 4 at position 0 of 'lens' is outside [0, 3]"));
  auto bad = Session::load(save(relu_rnn("Gelu"), "rnn_gelu.onnx"), opt);
  REQUIRE_FALSE(bad.ok());
  CHECK(has(bad.status().message(), "activation 'Gelu'"));
}
