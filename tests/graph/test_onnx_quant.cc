// The quantisation ops imported from ONNX (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, ConvInteger, QLinearMatMul) against values worked out
// by hand: rounding half to even, saturation, per-axis scales and zero points, padding that
// counts as the zero point, batch broadcasting, a QDQ Conv whose int8 weight folds at load, and
// the errors (a quantised value fed to an op that computes in f32, a scale of the wrong size).
#include "kernels/cpu/quantize.h"
#include "tests/graph/onnx_test_util.h"
#include "tests/graph/quant_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

Tensor run_fused(const onnx::ModelProto& m, const std::string& file, const TensorMap& in, const std::string& out,
                 const char* fusion) {
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, file), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at(out);
}

std::string load_error(const onnx::ModelProto& m, const std::string& file) {
  auto s = Session::load(save(m, file), SessionOptions{});
  REQUIRE_FALSE(s.ok());
  return s.status().to_string();
}

}  // namespace

TEST_CASE("QuantizeLinear rounds half to even, saturates, and quantises per axis") {
  auto m = model(19);
  auto* g = m.mutable_graph();
  add_input(g, "x", {8});
  add_f32(g, "s", {}, {0.5f});
  add_typed<uint8_t>(g, "z", onnx::TensorProto::UINT8, {}, {128});
  add_node(g, "QuantizeLinear", {"x", "s", "z"}, {"y"}, "q");
  add_output(g, "y");
  // x / 0.5 = 0, 3, 5, -2, 600 (saturates), -0.5 and 0.5 (to the even 0), 1.5 (to 2); + 128
  Tensor x(DType::kF32, {8});
  const std::vector<float> xv = {0.f, 1.5f, 2.5f, -1.f, 300.f, -0.25f, 0.25f, 0.75f};
  std::copy(xv.begin(), xv.end(), x.f32());
  for (const char* fusion : {"none", "all"}) {
    const Tensor y = run_fused(m, "q_u8.onnx", {{"x", x}}, "y", fusion);
    REQUIRE(y.dtype() == DType::kU8);
    CHECK(ints_of<uint8_t>(y) == std::vector<int>{128, 131, 133, 126, 255, 128, 128, 130});
  }

  auto a = model(19);
  g = a.mutable_graph();
  add_input(g, "x", {2, 3});
  add_f32(g, "s", {3}, {1.f, 2.f, 4.f});
  add_typed<int8_t>(g, "z", onnx::TensorProto::INT8, {3}, {0, 1, -1});
  int_attr(add_node(g, "QuantizeLinear", {"x", "s", "z"}, {"y"}, "q"), "axis", 1);
  add_output(g, "y");
  // column c: x / s[c] + z[c]: [1, 1+1, -1-1], [100, -150+1 (saturates at -128), 1-1]
  Tensor x2(DType::kF32, {2, 3});
  const std::vector<float> x2v = {1.f, 2.f, -4.f, 100.f, -300.f, 4.f};
  std::copy(x2v.begin(), x2v.end(), x2.f32());
  const Tensor y2 = run_model(a, "q_axis.onnx", {{"x", x2}}, "y");
  REQUIRE(y2.dtype() == DType::kI8);
  CHECK(ints_of<int8_t>(y2) == std::vector<int>{1, 2, -2, 100, -128, 0});
}

TEST_CASE("DequantizeLinear per axis (i8) and of an i32 accumulator") {
  auto m = model(19);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3}, "", -1, onnx::TensorProto::INT8);
  add_f32(g, "s", {3}, {1.f, 2.f, 4.f});
  add_typed<int8_t>(g, "z", onnx::TensorProto::INT8, {3}, {0, 1, -1});
  int_attr(add_node(g, "DequantizeLinear", {"x", "s", "z"}, {"y"}, "dq"), "axis", -1);
  add_output(g, "y");
  const Tensor x = typed<int8_t>(DType::kI8, {2, 3}, {1, 2, -2, 100, -128, 0});
  // (x - z[c]) * s[c]
  check_f32(run_model(m, "dq_axis.onnx", {{"x", x}}, "y"), {2, 3}, {1.f, 2.f, -4.f, 100.f, -258.f, 4.f});

  auto a = model(19);
  g = a.mutable_graph();
  add_input(g, "x", {2}, "", -1, onnx::TensorProto::INT32);
  add_f32(g, "s", {}, {0.5f});
  add_node(g, "DequantizeLinear", {"x", "s"}, {"y"}, "dq");
  add_output(g, "y");
  check_f32(run_model(a, "dq_i32.onnx", {{"x", typed<int32_t>(DType::kI32, {2}, {10, -3})}}, "y"), {2}, {5.f, -1.5f});
}

TEST_CASE("DynamicQuantizeLinear: the u8 scale and zero point of [min(0, x), max(0, x)]") {
  auto m = model(11);
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  add_node(g, "DynamicQuantizeLinear", {"x"}, {"y", "s", "z"}, "dql");
  add_output(g, "y");
  add_output(g, "s");
  add_output(g, "z");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "dql.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  Tensor x(DType::kF32, {4});
  const std::vector<float> xv = {0.f, 1.f, -0.5f, 2.f};
  std::copy(xv.begin(), xv.end(), x.f32());
  auto y = (*s)->run({{"x", x}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  // scale = (2 - -0.5) / 255; zero point = round(0.5 / scale) = 51; y = round(x / scale) + 51
  CHECK(y->at("s").f32()[0] == doctest::Approx(2.5 / 255).epsilon(1e-6));
  CHECK(ints_of<uint8_t>(y->at("z")) == std::vector<int>{51});
  CHECK(ints_of<uint8_t>(y->at("y")) == std::vector<int>{51, 153, 0, 255});
  // all zeros: scale 1 (as ONNX Runtime), everything 0
  Tensor zero(DType::kF32, {4});
  auto y0 = (*s)->run({{"x", zero}});
  REQUIRE(y0.ok());
  CHECK(y0->at("s").f32()[0] == 1.f);
  CHECK(ints_of<uint8_t>(y0->at("y")) == std::vector<int>{0, 0, 0, 0});
}

TEST_CASE("MatMulInteger: zero points per tensor (A) and per column (B), batch broadcasting") {
  auto m = model(10);
  auto* g = m.mutable_graph();
  add_input(g, "a", {2, 1, 3}, "", -1, onnx::TensorProto::UINT8);
  add_typed<int8_t>(g, "b", onnx::TensorProto::INT8, {3, 2}, {1, -1, 2, 0, -3, 4});
  add_typed<uint8_t>(g, "za", onnx::TensorProto::UINT8, {}, {1});
  add_typed<int8_t>(g, "zb", onnx::TensorProto::INT8, {2}, {0, 1});
  add_node(g, "MatMulInteger", {"a", "b", "za", "zb"}, {"y"}, "mm");
  add_output(g, "y");
  // A - 1: [0, 1, 2] and [3, 4, 6]; B - zb: [[1, -2], [2, -1], [-3, 3]]
  const Tensor a = typed<uint8_t>(DType::kU8, {2, 1, 3}, {1, 2, 3, 4, 5, 7});
  const Tensor y = run_model(m, "mmi.onnx", {{"a", a}}, "y");
  REQUIRE(y.dtype() == DType::kI32);
  CHECK(y.shape() == Shape{2, 1, 2});
  CHECK(ints_of<int32_t>(y) == std::vector<int>{-4, 5, -7, 8});
}

TEST_CASE("ConvInteger: padding counts as the zero point") {
  auto m = model(10);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 3, 3}, "", -1, onnx::TensorProto::UINT8);
  add_typed<uint8_t>(g, "w", onnx::TensorProto::UINT8, {1, 1, 2, 2}, {1, 2, 3, 4});
  add_typed<uint8_t>(g, "zx", onnx::TensorProto::UINT8, {}, {1});
  add_typed<uint8_t>(g, "zw", onnx::TensorProto::UINT8, {}, {1});
  ints_attr(add_node(g, "ConvInteger", {"x", "w", "zx", "zw"}, {"y"}, "ci"), "pads", {0, 0, 1, 1});
  add_output(g, "y");
  // X - 1 = [[0,1,2],[3,4,5],[6,7,8]] padded right and bottom with 0; W - 1 = [[0,1],[2,3]]
  const Tensor x = typed<uint8_t>(DType::kU8, {1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  const Tensor y = run_model(m, "ci.onnx", {{"x", x}}, "y");
  REQUIRE(y.dtype() == DType::kI32);
  CHECK(y.shape() == Shape{1, 1, 3, 3});
  CHECK(ints_of<int32_t>(y) == std::vector<int>{19, 25, 10, 37, 43, 16, 7, 8, 0});
}

TEST_CASE("QLinearMatMul: exact accumulator, requantised with sa * sb / sy") {
  auto m = model(10);
  auto* g = m.mutable_graph();
  add_input(g, "a", {1, 2}, "", -1, onnx::TensorProto::UINT8);
  add_f32(g, "sa", {}, {0.5f});
  add_typed<uint8_t>(g, "za", onnx::TensorProto::UINT8, {}, {128});
  add_typed<int8_t>(g, "b", onnx::TensorProto::INT8, {2, 1}, {4, 2});
  add_f32(g, "sb", {}, {0.25f});
  add_typed<int8_t>(g, "zb", onnx::TensorProto::INT8, {}, {0});
  add_f32(g, "sy", {}, {0.1f});
  add_typed<uint8_t>(g, "zy", onnx::TensorProto::UINT8, {}, {10});
  add_node(g, "QLinearMatMul", {"a", "sa", "za", "b", "sb", "zb", "sy", "zy"}, {"y"}, "qmm");
  add_output(g, "y");
  // acc = 2 * 4 + (-2) * 2 = 4; 4 * 0.5 * 0.25 / 0.1 = 5; + 10
  const Tensor y = run_model(m, "qmm.onnx", {{"a", typed<uint8_t>(DType::kU8, {1, 2}, {130, 126})}}, "y");
  REQUIRE(y.dtype() == DType::kU8);
  CHECK(ints_of<uint8_t>(y) == std::vector<int>{15});
}

TEST_CASE("A QDQ Conv: the int8 weight folds at load, activations round-trip through int8") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "sx", {}, {0.5f});
  add_typed<int8_t>(g, "zx", onnx::TensorProto::INT8, {}, {0});
  add_typed<int8_t>(g, "wq", onnx::TensorProto::INT8, {1, 1, 1, 1}, {2});
  add_f32(g, "sw", {1}, {0.25f});
  add_typed<int8_t>(g, "zw", onnx::TensorProto::INT8, {1}, {0});
  add_node(g, "QuantizeLinear", {"x", "sx", "zx"}, {"xq"}, "q");
  add_node(g, "DequantizeLinear", {"xq", "sx", "zx"}, {"xd"}, "dq");
  int_attr(add_node(g, "DequantizeLinear", {"wq", "sw", "zw"}, {"w"}, "dqw"), "axis", 0);
  add_node(g, "Conv", {"xd", "w"}, {"y"}, "conv");
  add_output(g, "y");
  // x / 0.5 = 0.6, 1.2, -0.4, 2 -> 1, 1, 0, 2 -> 0.5, 0.5, 0, 1; w = 2 * 0.25 = 0.5
  Tensor x(DType::kF32, {1, 1, 2, 2});
  const std::vector<float> xv = {0.3f, 0.6f, -0.2f, 1.f};
  std::copy(xv.begin(), xv.end(), x.f32());
  for (const char* fusion : {"none", "all"})
    check_f32(run_fused(m, "qdq_conv.onnx", {{"x", x}}, "y", fusion), {1, 1, 2, 2}, {0.25f, 0.25f, 0.f, 0.5f});
}

TEST_CASE("Quantisation errors name the node and the problem") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {3}, "", -1, onnx::TensorProto::INT8);
  add_node(g, "Relu", {"x"}, {"y"}, "relu");
  add_output(g, "y");
  std::string e = load_error(m, "relu_i8.onnx");
  CHECK_MESSAGE(has(e, "'relu'"), e);
  CHECK_MESSAGE(has(e, "does not take quantised values (DequantizeLinear first)"), e);

  auto a = model(13);
  g = a.mutable_graph();
  add_input(g, "x", {2, 3});
  add_f32(g, "s", {4}, {1.f, 1.f, 1.f, 1.f});
  int_attr(add_node(g, "QuantizeLinear", {"x", "s"}, {"y"}, "q"), "axis", 1);
  add_output(g, "y");
  e = load_error(a, "q_bad_scale.onnx");
  CHECK_MESSAGE(has(e, "'q'"), e);
  CHECK_MESSAGE(has(e, "scale [4] must be a scalar or [3]"), e);

  auto b = model(21);
  g = b.mutable_graph();
  add_input(g, "x", {2, 4});
  add_f32(g, "s", {2, 2}, {1.f, 1.f, 1.f, 1.f});
  auto* n = add_node(g, "QuantizeLinear", {"x", "s"}, {"y"}, "qb");
  int_attr(n, "block_size", 2);
  add_output(g, "y");
  e = load_error(b, "q_blocked.onnx");
  CHECK_MESSAGE(has(e, "blocked quantisation (block_size 2)"), e);
}

TEST_CASE("QuantizeLinear -> DequantizeLinear of one scale and zero point becomes FakeQuantize, the same bits") {
  // x -> Q(s, z) -> DQ(s2, z) -> y; with s2 == s the pair is one FakeQuantize (qdq_pair), with s2 != s
  // it stays two ops (a different function): s 0.5, z 3 (u8): x = 0.3 -> round(0.6) + 3 = 4 -> (4 - 3) * s2
  for (float s2 : {0.5f, 0.25f}) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {4});
    add_f32(g, "s", {}, {0.5f});
    add_f32(g, "s2", {}, {s2});
    add_typed<uint8_t>(g, "z", onnx::TensorProto::UINT8, {}, {3});
    add_node(g, "QuantizeLinear", {"x", "s", "z"}, {"q"}, "q");
    add_node(g, "DequantizeLinear", {"q", "s2", "z"}, {"d"}, "dq");
    add_node(g, "Relu", {"d"}, {"y"}, "relu");
    add_output(g, "y");
    SessionOptions opt;
    opt.threads = 1;
    auto sess = Session::load(save(m, "qdq_pair.onnx"), opt);
    REQUIRE_MESSAGE(sess.ok(), sess.status().to_string());
    const std::string ex = (*sess)->explain();
    CHECK_MESSAGE(has(ex, "FakeQuantize") == (s2 == 0.5f), ex);
    Tensor x(DType::kF32, {4});
    const std::vector<float> xv = {0.3f, -1.f, -2.f, 200.f};  // q: 4, 1, 0 (saturates), 255 (saturates)
    std::copy(xv.begin(), xv.end(), x.f32());
    auto y = (*sess)->run({{"x", x}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), {4}, {1 * s2, 0.f, 0.f, 252 * s2});
  }
}

namespace {

// QLinearConv x [1, 1, 2, 2] u8 (scale 0.5, zero point 128) by w [2, 1, 1, 1] i8 (scales 0.25 and 0.5 per
// channel, zero points 0), bias [4, 0] i32, y scale 0.25, zero point 10 (u8); the scales constants, so
// it imports as the op QLinearConv (oneDNN's int8 convolution or the reference kernel).
onnx::ModelProto qlinear_conv_model(bool constants, float sy = 0.25f) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2}, "", -1, onnx::TensorProto::UINT8);
  if (constants) {
    add_f32(g, "sx", {}, {0.5f});
    add_f32(g, "sw", {2}, {0.25f, 0.5f});
  } else {  // scales as inputs: the expansion (ConvInteger, DequantizeLinear, QuantizeLinear)
    add_input(g, "sx", {});
    add_input(g, "sw", {2});
  }
  add_typed<uint8_t>(g, "zx", onnx::TensorProto::UINT8, {}, {128});
  add_typed<int8_t>(g, "w", onnx::TensorProto::INT8, {2, 1, 1, 1}, {2, -4});
  add_typed<int8_t>(g, "zw", onnx::TensorProto::INT8, {2}, {0, 0});
  add_f32(g, "sy", {}, {sy});
  add_typed<uint8_t>(g, "zy", onnx::TensorProto::UINT8, {}, {10});
  add_typed<int32_t>(g, "b", onnx::TensorProto::INT32, {2}, {4, 0});
  add_node(g, "QLinearConv", {"x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"}, {"y"}, "qconv");
  add_output(g, "y");
  return m;
}

}  // namespace

TEST_CASE("QLinearConv: per-channel scales and an int32 bias, on oneDNN, the reference kernel and the expansion") {
  // x - 128 = [2, 4, -2, 0]. Channel 0: (2 * [2, 4, -2, 0] + 4) * 0.5 * 0.25 / 0.25 = [4, 6, 0, 2], + 10.
  // Channel 1: -4 * [2, 4, -2, 0] * 0.5 * 0.5 / 0.25 = [-8, -16, 8, 0], + 10, saturating at 0.
  const Tensor x = typed<uint8_t>(DType::kU8, {1, 1, 2, 2}, {130, 132, 126, 128});
  const std::vector<int> want = {14, 16, 10, 12, 2, 0, 18, 10};
  for (const char* kernels : {"onednn", "reference"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.cpu_kernels = kernels;
    auto s = Session::load(save(qlinear_conv_model(true), "qconv.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::string k = kernels_of(**s, {{"x", x}});
    CHECK_MESSAGE(has(k, std::string(kernels) == "onednn" ? "onednn_qconv" : "QLinearConv"), k);
    auto y = (*s)->run({{"x", x}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK_MESSAGE(ints_of<uint8_t>(y->at("y")) == want, kernels);
  }
  Tensor sx(DType::kF32, {}), sw(DType::kF32, {2});
  sx.f32()[0] = 0.5f;
  sw.f32()[0] = 0.25f;
  sw.f32()[1] = 0.5f;
  auto m = qlinear_conv_model(false);
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  const Tensor y = run_model(m, "qconv_inputs.onnx", {{"x", x}, {"sx", sx}, {"sw", sw}}, "y");
  CHECK(ints_of<uint8_t>(y) == want);
  // A negative y scale flips the signs (the activation bounds too): [-4, -6, 0, -2] and [8, 16, -8, 0], + 10.
  for (const char* kernels : {"onednn", "reference"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.cpu_kernels = kernels;
    auto s = Session::load(save(qlinear_conv_model(true, -0.25f), "qconv_neg.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto yn = (*s)->run({{"x", x}});
    REQUIRE_MESSAGE(yn.ok(), yn.status().to_string());
    CHECK_MESSAGE(ints_of<uint8_t>(yn->at("y")) == std::vector<int>({6, 4, 10, 8, 18, 26, 2, 10}), kernels);
  }
}

TEST_CASE("A QDQ Conv + Clip: one QLinearConv where ONNX Runtime drops the Clip, the f32 ops where it does not") {
  // xq (u8, scale 0.5, zp 128) -> DQ -> Conv (w i8 [1, 1, 1, 1] = 3 at scale 0.5, bias i32 4 at scale 0.25)
  // -> Clip(0, 1) -> Q (scale 0.125, zp 0, u8). x - 128 = [2, -2, 1, 0]: acc = 3 * that + 4 = [10, -2, 7, 4];
  // real = acc * 0.25 = [2.5, -0.5, 1.75, 1]; clipped [1, 0, 1, 1]; / 0.125 = [8, 0, 8, 8]. y's range
  // [0, 31.875] is wider than the Clip, which ONNX Runtime therefore keeps (and runs the f32 ops): so
  // do we. With Clip(0, 32) it is redundant (ONNX Runtime drops it and fuses): one QLinearConv,
  // [20, 0, 14, 8].
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "xq", {1, 1, 2, 2}, "", -1, onnx::TensorProto::UINT8);
  add_f32(g, "sx", {}, {0.5f});
  add_typed<uint8_t>(g, "zx", onnx::TensorProto::UINT8, {}, {128});
  add_typed<int8_t>(g, "wq", onnx::TensorProto::INT8, {1, 1, 1, 1}, {3});
  add_f32(g, "sw", {1}, {0.5f});
  add_typed<int8_t>(g, "zw", onnx::TensorProto::INT8, {1}, {0});
  add_typed<int32_t>(g, "bq", onnx::TensorProto::INT32, {1}, {4});
  add_f32(g, "sb", {1}, {0.25f});
  add_f32(g, "lo", {}, {0.f});
  add_f32(g, "hi", {}, {1.f});
  add_f32(g, "sy", {}, {0.125f});
  add_typed<uint8_t>(g, "zy", onnx::TensorProto::UINT8, {}, {0});
  add_node(g, "DequantizeLinear", {"xq", "sx", "zx"}, {"x"}, "dqx");
  int_attr(add_node(g, "DequantizeLinear", {"wq", "sw", "zw"}, {"w"}, "dqw"), "axis", 0);
  int_attr(add_node(g, "DequantizeLinear", {"bq", "sb"}, {"b"}, "dqb"), "axis", 0);
  add_node(g, "Conv", {"x", "w", "b"}, {"c"}, "conv");
  add_node(g, "Clip", {"c", "lo", "hi"}, {"r"}, "clip");
  add_node(g, "QuantizeLinear", {"r", "sy", "zy"}, {"yq"}, "q");
  add_output(g, "yq");
  const Tensor x = typed<uint8_t>(DType::kU8, {1, 1, 2, 2}, {130, 126, 129, 128});
  auto inverted = m;  // Clip(2, -1): every value -1 (ONNX), quantised to 0 (saturated)
  for (auto& t : *inverted.mutable_graph()->mutable_initializer())
    if (t.name() == "lo") {
      const float two = 2.f;
      t.set_raw_data(std::string(reinterpret_cast<const char*>(&two), 4));
    } else if (t.name() == "hi") {
      const float minus_one = -1.f;
      t.set_raw_data(std::string(reinterpret_cast<const char*>(&minus_one), 4));
    }
  auto s_inv = Session::load(save(inverted, "qdq_conv_inverted.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s_inv.ok(), s_inv.status().to_string());
  auto y_inv = (*s_inv)->run({{"xq", x}});
  REQUIRE_MESSAGE(y_inv.ok(), y_inv.status().to_string());
  CHECK(ints_of<uint8_t>(y_inv->at("yq")) == std::vector<int>{0, 0, 0, 0});
  auto wide = m;  // Clip(0, 32): redundant with y's range
  for (auto& t : *wide.mutable_graph()->mutable_initializer())
    if (t.name() == "hi") {
      const float v = 32.f;
      t.set_raw_data(std::string(reinterpret_cast<const char*>(&v), 4));
    }
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "qdq_conv.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::string k = kernels_of(**s, {{"xq", x}});
    CHECK_MESSAGE(k.find("qconv") == std::string::npos, k);  // the Clip is not redundant: f32 ops
    auto y = (*s)->run({{"xq", x}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(ints_of<uint8_t>(y->at("yq")) == std::vector<int>{8, 0, 8, 8});
    auto sw = Session::load(save(wide, "qdq_conv_wide.onnx"), opt);
    REQUIRE_MESSAGE(sw.ok(), sw.status().to_string());
    const std::string kw = kernels_of(**sw, {{"xq", x}});
    CHECK_MESSAGE((kw == "onednn_qconv " || kw == "QLinearConv "), kw);  // one step: no f32 conv, no Q / DQ
    auto yw = (*sw)->run({{"xq", x}});
    REQUIRE_MESSAGE(yw.ok(), yw.status().to_string());
    CHECK(ints_of<uint8_t>(yw->at("yq")) == std::vector<int>{20, 0, 14, 8});
  }
  // A bias of 2^31 - 3 (with the redundant Clip(0, 32)): acc + bias could leave int32, which the int8
  // kernels would wrap (to about -2^31: 0). The rewrite refuses it; the f32 ops give (acc + bias) *
  // 0.25, clipped to 32, / 0.125 = 256, saturated to 255 everywhere.
  auto big = wide;
  for (auto& t : *big.mutable_graph()->mutable_initializer())
    if (t.name() == "bq") {
      const int32_t b = 2147483645;
      t.clear_int32_data();
      t.set_raw_data(std::string(reinterpret_cast<const char*>(&b), 4));
    }
  auto s_big = Session::load(save(big, "qdq_conv_big_bias.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s_big.ok(), s_big.status().to_string());
  const std::string kb = kernels_of(**s_big, {{"xq", x}});
  CHECK_MESSAGE(kb.find("qconv") == std::string::npos, kb);
  auto y_big = (*s_big)->run({{"xq", x}});
  REQUIRE_MESSAGE(y_big.ok(), y_big.status().to_string());
  CHECK(ints_of<uint8_t>(y_big->at("yq")) == std::vector<int>{255, 255, 255, 255});
}

TEST_CASE("MatMulInteger by constant int8 weights: oneDNN's int8 matmul and the reference kernel agree by hand") {
  auto m = model(10);
  auto* g = m.mutable_graph();
  add_input(g, "a", {2, 3}, "", -1, onnx::TensorProto::UINT8);
  add_input(g, "za", {}, "", -1, onnx::TensorProto::UINT8);  // a run-time zero point (DynamicQuantizeLinear's)
  g->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape();  // a scalar
  add_typed<int8_t>(g, "b", onnx::TensorProto::INT8, {3, 2}, {1, -1, 2, 0, -3, 4});
  add_node(g, "MatMulInteger", {"a", "b", "za"}, {"y"}, "mm");
  add_output(g, "y");
  // A - 1 = [[0, 1, 2], [3, 4, 6]]; @ [[1, -1], [2, 0], [-3, 4]] = [[-4, 8], [-7, 21]]
  const TensorMap in = {{"a", typed<uint8_t>(DType::kU8, {2, 3}, {1, 2, 3, 4, 5, 7})},
                        {"za", typed<uint8_t>(DType::kU8, {}, {1})}};
  for (const char* kernels : {"onednn", "reference"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.cpu_kernels = kernels;
    auto s = Session::load(save(m, "mmi_const.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::string k = kernels_of(**s, in);
    CHECK_MESSAGE(has(k, std::string(kernels) == "onednn" ? "onednn_matmul_integer" : "MatMulInteger"), k);
    auto y = (*s)->run(in);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(ints_of<int32_t>(y->at("y")) == std::vector<int>{-4, 8, -7, 21});
  }
}

TEST_CASE("A QDQ residual Add + Relu reads as one QLinearAdd (qdq_add): the same bits as the four ops") {
  // a: (x - 128) * 0.5 = [1, -4, 0, 6]; b: x * 0.25 = [2.5, 0.5, 0, 63.75]; sum [3.5, -3.5, 0, 69.75];
  // Relu; / 0.5 = [7, 0, 0, 139.5 -> 140 (half to even)], zero point 0.
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "a", {4}, "", -1, onnx::TensorProto::UINT8);
  add_input(g, "b", {4}, "", -1, onnx::TensorProto::UINT8);
  add_f32(g, "sa", {}, {0.5f});
  add_typed<uint8_t>(g, "za", onnx::TensorProto::UINT8, {}, {128});
  add_f32(g, "sb", {}, {0.25f});
  add_typed<uint8_t>(g, "zb", onnx::TensorProto::UINT8, {}, {0});
  add_f32(g, "sy", {}, {0.5f});
  add_typed<uint8_t>(g, "zy", onnx::TensorProto::UINT8, {}, {0});
  add_node(g, "DequantizeLinear", {"a", "sa", "za"}, {"da"}, "dqa");
  add_node(g, "DequantizeLinear", {"b", "sb", "zb"}, {"db"}, "dqb");
  add_node(g, "Add", {"da", "db"}, {"s"}, "add");
  add_node(g, "Relu", {"s"}, {"r"}, "relu");
  add_node(g, "QuantizeLinear", {"r", "sy", "zy"}, {"y"}, "q");
  add_output(g, "y");
  const TensorMap in = {{"a", typed<uint8_t>(DType::kU8, {4}, {130, 120, 128, 140})},
                        {"b", typed<uint8_t>(DType::kU8, {4}, {10, 2, 0, 255})}};
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "qdq_add.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::string k = kernels_of(**s, in);
    CHECK_MESSAGE(k == "QLinearAdd ", k);
    auto y = (*s)->run(in);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(ints_of<uint8_t>(y->at("y")) == std::vector<int>{7, 0, 0, 140});
  }
}

TEST_CASE("int8 activations in NHWC between int8 steps: the requantisation and QLinearAdd by hand") {
  // acc [pixel][channel] = [[4, 5, 6], [7, -20, 100]]; (acc + bias) * multiplier, half to even, + 10:
  // p0: 2, 6, 10 -> 12, 16, 20; p1: 3.5 -> 4, -19 -> saturates, 198 -> 14, 0, 208.
  cpu::Requant r;
  r.multiplier = {0.5f, 1.f, 2.f};
  r.bias = {0, 1, -1};
  r.zero_point = 10;
  const std::vector<int32_t> acc = {4, 5, 6, 7, -20, 100};
  std::vector<uint8_t> y(6);
  cpu::requantize_nhwc(r, 1, 2, 3, acc.data(), y.data(), true);
  CHECK(std::vector<int>(y.begin(), y.end()) == std::vector<int>{12, 16, 20, 14, 0, 208});
  cpu::requantize_nhwc(r, 1, 2, 3, acc.data(), y.data(), false);
  CHECK(std::vector<int>(y.begin(), y.end()) == std::vector<int>{12, 14, 16, 0, 20, 208});
  // QLinearAdd of scale 1, zero point 0 (y = a + b) over [1, 2, 3 pixels]: a NCHW, b NHWC.
  cpu::QAddParams p;
  const std::vector<uint8_t> a = {1, 2, 3, 4, 5, 6}, b_nhwc = {10, 40, 20, 50, 30, 60};
  for (bool y_nhwc : {false, true}) {
    cpu::QAddLayouts l;
    l.c = 2, l.pixels = 3, l.a_nhwc = false, l.b_nhwc = true, l.y_nhwc = y_nhwc;
    std::vector<uint8_t> out(6);
    cpu::qlinear_add(p, l, a.data(), b_nhwc.data(), out.data());
    const std::vector<int> want =
        y_nhwc ? std::vector<int>{11, 44, 22, 55, 33, 66} : std::vector<int>{11, 22, 33, 44, 55, 66};
    CHECK(std::vector<int>(out.begin(), out.end()) == want);
  }
}

TEST_CASE("A QDQ chain of convolutions and a residual keeps its int8 activations in NHWC, ORT's values") {
  // x (u8) -> QLinearConv 1x1 (4 -> 4) -> QLinearConv 1x1 (4 -> 4) -> a QDQ Add with the first's
  // output (QLinearAdd): the layout pass keeps the convolutions' outputs in NHWC; the result equals
  // the same graph run one op at a time on the reference kernels (fusion raw, cpu_kernels reference:
  // NCHW throughout).
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4, 5, 6}, "", -1, onnx::TensorProto::UINT8);
  add_f32(g, "s", {}, {0.05f});
  add_typed<uint8_t>(g, "z", onnx::TensorProto::UINT8, {}, {3});
  std::vector<int8_t> w1(16), w2(16);
  for (int i = 0; i < 16; ++i) w1[static_cast<size_t>(i)] = static_cast<int8_t>((i * 37) % 41 - 20);
  for (int i = 0; i < 16; ++i) w2[static_cast<size_t>(i)] = static_cast<int8_t>((i * 23) % 29 - 14);
  add_typed<int8_t>(g, "w1", onnx::TensorProto::INT8, {4, 4, 1, 1}, w1);
  add_typed<int8_t>(g, "w2", onnx::TensorProto::INT8, {4, 4, 1, 1}, w2);
  add_f32(g, "sw", {}, {0.02f});
  add_typed<int8_t>(g, "zw", onnx::TensorProto::INT8, {}, {0});
  add_node(g, "QLinearConv", {"x", "s", "z", "w1", "sw", "zw", "s", "z"}, {"c1"}, "conv1");
  add_node(g, "QLinearConv", {"c1", "s", "z", "w2", "sw", "zw", "s", "z"}, {"c2"}, "conv2");
  add_node(g, "DequantizeLinear", {"c1", "s", "z"}, {"d1"}, "dq1");  // read as QLinearAdd (qdq_add)
  add_node(g, "DequantizeLinear", {"c2", "s", "z"}, {"d2"}, "dq2");
  add_node(g, "Add", {"d1", "d2"}, {"sum"}, "add");
  add_node(g, "QuantizeLinear", {"sum", "s", "z"}, {"y"}, "q");
  add_output(g, "y");
  std::vector<uint8_t> xv(120);
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<uint8_t>((i * 53) % 251);
  const TensorMap in = {{"x", typed<uint8_t>(DType::kU8, {1, 4, 5, 6}, xv)}};
  SessionOptions ref_opt;
  ref_opt.fusion = "raw";
  ref_opt.cpu_kernels = "reference";
  auto ref = Session::load(save(m, "qnhwc.onnx"), ref_opt);
  REQUIRE_MESSAGE(ref.ok(), ref.status().to_string());
  auto want = (*ref)->run(in);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  SessionOptions opt;
  opt.threads = 2;
  auto s = Session::load(save(m, "qnhwc.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto got = (*s)->run(in);
  REQUIRE_MESSAGE(got.ok(), got.status().to_string());
  CHECK(ints_of<uint8_t>(got->at("y")) == ints_of<uint8_t>(want->at("y")));
  auto steps = (*s)->profile(in, 1);
  REQUIRE(steps.ok());
  int native = 0;
  for (const StepTime& t : *steps) native += t.detail.find("native") != std::string::npos;
  CHECK_MESSAGE(native >= 2, "no int8 activation kept in NHWC");
}

TEST_CASE("A QDQ MaxPool of one scale and zero point runs on the 8-bit values (qdq_maxpool), by hand") {
  // x (u8) [1, 1, 4, 4] -> DequantizeLinear(0.5, 10) -> MaxPool 2x2 stride 2 -> QuantizeLinear(0.5, 10):
  // the maximum of each 2x2 block of x itself.
  auto build = [](float out_scale, float in_scale = 0.5f) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 1, 4, 4}, "", -1, onnx::TensorProto::UINT8);
    add_f32(g, "s", {}, {in_scale});
    add_f32(g, "so", {}, {out_scale});
    add_typed<uint8_t>(g, "z", onnx::TensorProto::UINT8, {}, {10});
    add_node(g, "DequantizeLinear", {"x", "s", "z"}, {"d"}, "dq");
    auto* pool = add_node(g, "MaxPool", {"d"}, {"p"}, "pool");
    auto* k = pool->add_attribute();
    k->set_name("kernel_shape");
    k->set_type(onnx::AttributeProto::INTS);
    k->add_ints(2), k->add_ints(2);
    auto* st = pool->add_attribute();
    st->set_name("strides");
    st->set_type(onnx::AttributeProto::INTS);
    st->add_ints(2), st->add_ints(2);
    add_node(g, "QuantizeLinear", {"p", "so", "z"}, {"y"}, "q");
    add_output(g, "y");
    return m;
  };
  const std::vector<uint8_t> xv = {1, 200, 3, 4, 5, 6, 7, 8, 0, 0, 255, 9, 0, 11, 12, 13};
  const TensorMap in = {{"x", typed<uint8_t>(DType::kU8, {1, 1, 4, 4}, xv)}};
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(build(0.5f), "qdq_maxpool.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    const std::string k = kernels_of(**s, in);
    CHECK_MESSAGE(k == "MaxPool ", k);
    auto y = (*s)->run(in);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    CHECK(ints_of<uint8_t>(y->at("y")) == std::vector<int>{200, 8, 11, 255});
  }
  // Another output scale: the rule does not apply; the f32 path gives (max - 10) * 0.5 / 0.25 + 10,
  // saturated: 200 -> 390 -> 255, 8 -> 6, 11 -> 12, 255 -> 255.
  auto s = Session::load(save(build(0.25f), "qdq_maxpool2.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  CHECK(kernels_of(**s, in).find("DequantizeLinear") != std::string::npos);
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints_of<uint8_t>(y->at("y")) == std::vector<int>{255, 6, 12, 255});
  // A negative scale (both -0.5) reverses the order: the real maximum is each block's smallest x, which
  // quantises back to itself. The rule must not pool the 8-bit values (it would give 200, 8, 11, 255).
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.fusion = fusion;
    auto sn = Session::load(save(build(-0.5f, -0.5f), "qdq_maxpool_neg.onnx"), opt);
    REQUIRE_MESSAGE(sn.ok(), sn.status().to_string());
    auto yn = (*sn)->run(in);
    REQUIRE_MESSAGE(yn.ok(), yn.status().to_string());
    CHECK_MESSAGE(ints_of<uint8_t>(yn->at("y")) == std::vector<int>({1, 3, 0, 9}), fusion);
  }
}

TEST_CASE("MaxPool of 8-bit values: NCHW and NHWC, padding never selected, by hand") {
  // int8 x [1, 2, 3, 3], 3x3 window, pads 1, stride 2 -> [1, 2, 2, 2]; channel 1 is channel 0 negated.
  cpu::PoolParams p;
  p.c = 2, p.h = 3, p.w = 3, p.oh = 2, p.ow = 2, p.kh = 3, p.kw = 3, p.stride_h = 2, p.stride_w = 2;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const std::vector<int8_t> c0 = {-5, -3, -9, -7, -100, -2, -8, -6, -128};
  std::vector<int8_t> nchw(c0);
  for (int8_t v : c0) nchw.push_back(static_cast<int8_t>(v == -128 ? 127 : -v));
  // Windows (rows, cols) [0,1]x[0,1], [0,1]x[1,2], [1,2]x[0,1], [1,2]x[1,2] of each channel.
  const std::vector<int> want = {-3, -2, -6, -2, 100, 100, 100, 127};
  std::vector<int8_t> y(8);
  cpu::max_pool2d_8bit(p, true, false, nchw.data(), y.data());
  CHECK(std::vector<int>(y.begin(), y.end()) == want);
  std::vector<int8_t> nhwc(18), y_nhwc(8);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 9; ++i) nhwc[static_cast<size_t>(i * 2 + c)] = nchw[static_cast<size_t>(c * 9 + i)];
  cpu::max_pool2d_8bit(p, true, true, nhwc.data(), y_nhwc.data());
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 4; ++i) CHECK(y_nhwc[static_cast<size_t>(i * 2 + c)] == want[static_cast<size_t>(c * 4 + i)]);
}
