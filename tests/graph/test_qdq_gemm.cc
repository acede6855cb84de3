// A QDQ Gemm (ONNX Runtime's QGemm pattern) read as a 1x1 QLinearConv (graph/passes/qdq_gemm.cc):
// values worked out by hand, B as [K, N] and as [N, K] (transB), per-column scales, an int32 bias,
// the Relu a clamp, on oneDNN and the reference kernel, fused and not; and a Gemm the rewrite
// refuses (alpha 0.5) computed as the f32 ops say.
#include "tests/graph/onnx_test_util.h"
#include "tests/graph/quant_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

// xq (u8 [2, 3], scale 0.5, zp 128) -> DQ -> Gemm(B = DQ(wq, [0.5, 0.25] per column), C = DQ(bias
// [10, 20] at sx * sw = [0.25, 0.125])) -> Relu -> Q (scale 0.125, zp 0, u8). The columns of B are
// [1, 3, -1] and [-2, 0, 4].
onnx::ModelProto qdq_gemm(bool trans_b, float alpha, int y_type = onnx::TensorProto::UINT8) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "xq", {2, 3}, "", -1, onnx::TensorProto::UINT8);
  add_f32(g, "sx", {}, {0.5f});
  add_typed<uint8_t>(g, "zx", onnx::TensorProto::UINT8, {}, {128});
  if (trans_b)
    add_typed<int8_t>(g, "wq", onnx::TensorProto::INT8, {2, 3}, {1, 3, -1, -2, 0, 4});
  else
    add_typed<int8_t>(g, "wq", onnx::TensorProto::INT8, {3, 2}, {1, -2, 3, 0, -1, 4});
  add_f32(g, "sw", {2}, {0.5f, 0.25f});
  add_typed<int8_t>(g, "zw", onnx::TensorProto::INT8, {2}, {0, 0});
  add_typed<int32_t>(g, "bq", onnx::TensorProto::INT32, {2}, {10, 20});
  add_f32(g, "sb", {2}, {0.25f, 0.125f});
  add_f32(g, "sy", {}, {0.125f});
  if (y_type == onnx::TensorProto::UINT8)
    add_typed<uint8_t>(g, "zy", onnx::TensorProto::UINT8, {}, {0});
  else
    add_typed<int8_t>(g, "zy", onnx::TensorProto::INT8, {}, {0});
  add_node(g, "DequantizeLinear", {"xq", "sx", "zx"}, {"x"}, "dqx");
  int_attr(add_node(g, "DequantizeLinear", {"wq", "sw", "zw"}, {"w"}, "dqw"), "axis", trans_b ? 0 : 1);
  int_attr(add_node(g, "DequantizeLinear", {"bq", "sb"}, {"b"}, "dqb"), "axis", 0);
  auto* gemm = add_node(g, "Gemm", {"x", "w", "b"}, {"c"}, "fc");
  int_attr(gemm, "transB", trans_b ? 1 : 0);
  auto* a = gemm->add_attribute();
  a->set_name("alpha");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(alpha);
  add_node(g, "Relu", {"c"}, {"r"}, "relu");
  add_node(g, "QuantizeLinear", {"r", "sy", "zy"}, {"yq"}, "q");
  add_output(g, "yq");
  return m;
}

}  // namespace

TEST_CASE("A QDQ Gemm reads as one 1x1 QLinearConv (qdq_gemm): B either way round, by hand") {
  // x - 128 = [[2, -2, 1], [0, 3, -8]]. Column 0: acc = [-5, 17] + 10 = [5, 27], * 0.25 = [1.25, 6.75],
  // / 0.125 = [10, 54]. Column 1: acc = [0, -32] + 20 = [20, -12], * 0.125 = [2.5, -1.5], Relu [2.5, 0],
  // / 0.125 = [20, 0].
  const TensorMap in = {{"xq", typed<uint8_t>(DType::kU8, {2, 3}, {130, 126, 129, 128, 131, 120})}};
  for (bool trans_b : {false, true})
    for (const char* kernels : {"onednn", "reference"})
      for (const char* fusion : {"none", "all"}) {
        CAPTURE(trans_b);
        CAPTURE(kernels);
        CAPTURE(fusion);
        SessionOptions opt;
        opt.threads = 1;
        opt.fusion = fusion;
        opt.cpu_kernels = kernels;
        auto s = Session::load(save(qdq_gemm(trans_b, 1.f), "qdq_gemm.onnx"), opt);
        REQUIRE_MESSAGE(s.ok(), s.status().to_string());
        const std::string k = kernels_of(**s, in);
        CHECK_MESSAGE(k.find(std::string(kernels) == "onednn" ? "onednn_qconv" : "QLinearConv") != std::string::npos,
                      k);
        CHECK_MESSAGE(k.find("gemm") == std::string::npos, k);  // no f32 product left
        auto y = (*s)->run(in);
        REQUIRE_MESSAGE(y.ok(), y.status().to_string());
        CHECK(y->at("yq").shape() == Shape{2, 2});
        CHECK(ints_of<uint8_t>(y->at("yq")) == std::vector<int>{10, 20, 54, 0});
      }
}

TEST_CASE("A QDQ Gemm of alpha 0.5 stays as its f32 ops (qdq_gemm refuses it), by hand") {
  // (acc * sx * sw * 0.5 + bias * sx * sw): column 0 [-0.625 + 2.5, 2.125 + 2.5] = [1.875, 4.625] -> [15, 37];
  // column 1 [0 + 2.5, -2 + 2.5] = [2.5, 0.5] -> [20, 4].
  const TensorMap in = {{"xq", typed<uint8_t>(DType::kU8, {2, 3}, {130, 126, 129, 128, 131, 120})}};
  auto s = Session::load(save(qdq_gemm(true, 0.5f), "qdq_gemm_alpha.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const std::string k = kernels_of(**s, in);
  CHECK_MESSAGE(k.find("qconv") == std::string::npos, k);
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints_of<uint8_t>(y->at("yq")) == std::vector<int>{15, 20, 37, 4});
}

TEST_CASE("Two QDQ Gemms reading one weight, beside a value named like the rewrite's: both rewritten, by hand") {
  // The second Gemm reads the same DequantizeLinears (x, w, bias); a graph output is named "wq.1x1",
  // the name the rewrite would give B^T's 1x1 weights: each rewrite takes a fresh name.
  auto m = qdq_gemm(false, 1.f);
  auto* g = m.mutable_graph();
  add_node(g, "Gemm", {"x", "w", "b"}, {"c2"}, "fc2");
  add_node(g, "Relu", {"c2"}, {"r2"}, "relu2");
  add_node(g, "QuantizeLinear", {"r2", "sy", "zy"}, {"yq2"}, "q2");
  add_node(g, "Identity", {"x"}, {"wq.1x1"}, "clash");
  add_output(g, "yq2");
  add_output(g, "wq.1x1");
  const TensorMap in = {{"xq", typed<uint8_t>(DType::kU8, {2, 3}, {130, 126, 129, 128, 131, 120})}};
  auto s = Session::load(save(m, "qdq_gemm_shared.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const std::string k = kernels_of(**s, in);
  CHECK_MESSAGE(k.find("gemm") == std::string::npos, k);
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints_of<uint8_t>(y->at("yq")) == std::vector<int>{10, 20, 54, 0});
  CHECK(ints_of<uint8_t>(y->at("yq2")) == std::vector<int>{10, 20, 54, 0});
  CHECK(y->at("wq.1x1").f32()[0] == 1.f);  // (130 - 128) * 0.5
}

TEST_CASE("A QDQ Gemm of uint8 x and int8 y stays as its f32 ops (ONNX Runtime fuses only one type), by hand") {
  // The same reals as above, quantised to int8 at 0.125, zero point 0: [10, 20, 54, 0].
  const TensorMap in = {{"xq", typed<uint8_t>(DType::kU8, {2, 3}, {130, 126, 129, 128, 131, 120})}};
  auto s = Session::load(save(qdq_gemm(true, 1.f, onnx::TensorProto::INT8), "qdq_gemm_mixed.onnx"), SessionOptions{});
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const std::string k = kernels_of(**s, in);
  CHECK_MESSAGE(k.find("qconv") == std::string::npos, k);
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  CHECK(ints_of<int8_t>(y->at("yq")) == std::vector<int>{10, 20, 54, 0});
}
