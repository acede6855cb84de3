// A Gemm between DequantizeLinears and a QuantizeLinear (a QDQ model's classifier or fully
// connected layer, as ONNX Runtime's quantize_static writes it; ONNX Runtime runs it as QGemm),
// anchored at the QuantizeLinear, becomes a 1x1 QLinearConv between two views:
//
//   xq [M, K] -> DQ(sx, zx) ---+
//   wq -> DQ(sw, zw) ----------+--> Gemm -> [Relu | Clip(lo, hi)] -> Q(sy, zy) -> yq [M, N]
//   bq -> DQ(sx * sw) ---------+
//     =>  xq -> Reshape [M, K, 1, 1] -> QLinearConv(wq as [N, K, 1, 1], ...) -> Reshape [M, N] -> yq
//
// A 1x1 convolution of M images of one pixel is the matrix product, and QLinearConv's arithmetic
// is QGemm's: the accumulator exact in int32, the int32 bias added, one requantisation by
// sx * sw[n] / sy (a Relu or Clip only where ONNX Runtime drops it as redundant, as qdq_conv). So the product runs on
// the int8 convolution (oneDNN's, VNNI where the CPU has it) on 8-bit weights, a quarter of the f32 weights' bytes:
// MobileNetV2's classifier read 5 MB of f32 weights per image. Conditions, as qdq_conv's: x and y
// per tensor, 8-bit, of one type (and w int8 with an int8 x: where ONNX Runtime fuses, so that the
// two give the same bits; elsewhere both compute the f32 ops); w a constant 8-bit matrix, per tensor
// or per output column (axis 0 of B^T);
// transA 0, alpha 1, beta 1; the bias absent or a 1-D int32 constant at scale sx * sw; no
// accumulator beyond int32; the Gemm's and the activation's outputs read only along the pattern.
// A rewrite of three nodes, so a pass of its own rather than a one-node RewriteRule.
#include <map>
#include <string>
#include <vector>

#include "graph/passes/graph_edit.h"
#include "graph/passes/pass.h"
#include "graph/passes/qdq_match.h"

namespace fusert {

namespace {

using namespace qdq;

// One match: the nodes it erases and the three that take the QuantizeLinear's place.
struct GemmMatch {
  std::vector<int> erased;
  std::vector<Node> nodes;
};

bool is_8bit(DType t) { return t == DType::kI8 || t == DType::kU8; }

// wq [K, N] (transB 0) or [N, K] (transB 1) as the convolution's weights [N, K, 1, 1].
Tensor conv_weights(const Tensor& w, bool trans_b) {
  const int64_t n = w.shape()[trans_b ? 0 : 1], k = w.shape()[trans_b ? 1 : 0];
  Tensor out(w.dtype(), {n, k, 1, 1});
  const auto* src = static_cast<const uint8_t*>(w.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < k; ++j) dst[i * k + j] = trans_b ? src[i * k + j] : src[j * n + i];
  return out;
}

// A new value of `dtype` and `shape` named after `base`.
ValueId new_value(Graph& g, const std::string& base, DType dtype, const Shape& shape, const SourceLoc& loc) {
  const ValueId id = g.add_value(unique_value_name(g, base));
  Value& v = g.value(id);
  v.dtype = dtype;
  v.shape = shape;
  v.shape_known = true;
  v.loc = loc;
  return id;
}

Node reshape(const std::string& name, const SourceLoc& loc, ValueId in, ValueId out, std::vector<int64_t> dims) {
  Node r = make_node(OpKind::kReshape, name, loc);
  r.attrs["shape"].ints = std::move(dims);
  r.inputs = {in};
  r.outputs = {out};
  return r;
}

// The Gemm's operands when they match (dqx, dqw, the bias value); false otherwise. Reads only.
bool gemm_operands(const Graph& g, const Node& gemm, DType y_type, const Node** dqx, const Node** dqw, ValueId* bias) {
  if (gemm.attr_i("transA") != 0 || gemm.attr_f("alpha") != 1.0) return false;
  *dqx = dq_of(g, gemm.inputs[0]);
  *dqw = dq_of(g, gemm.inputs[1]);
  if (!*dqx || !*dqw || !per_tensor(g, **dqx) || (*dqx)->inputs.size() < 3) return false;
  if (!is_8bit(g.value((*dqx)->inputs[0]).dtype) || !constant(g, (*dqw)->inputs[0])) return false;
  const Tensor& w = constant(g, (*dqw)->inputs[0])->data;
  if (!is_8bit(w.dtype()) || w.shape().size() != 2 || (*dqw)->inputs.size() < 3) return false;
  if (!ort_types(g.value((*dqx)->inputs[0]).dtype, w.dtype(), y_type)) return false;
  const Value* sw = constant(g, (*dqw)->inputs[1]);
  const Value* zw = constant(g, (*dqw)->inputs[2]);
  const bool trans_b = gemm.attr_i("transB") != 0;
  const int64_t n = w.shape()[trans_b ? 0 : 1];
  if (!sw || !usable_scales(sw->data) || !zw || zw->data.numel() != sw->data.numel()) return false;
  if (sw->data.numel() != 1) {  // per output column: B's axis of N
    int64_t axis = (*dqw)->attr_i("axis");
    if (axis < 0) axis += 2;
    if (sw->data.numel() != n || axis != (trans_b ? 0 : 1)) return false;
  }
  *bias = kNoValue;
  if (gemm.inputs.size() > 2 && gemm.inputs[2] != kNoValue) {
    const Node* dqb = dq_of(g, gemm.inputs[2]);
    if (gemm.attr_f("beta") != 1.0 || !dqb || g.value(dqb->inputs[0]).shape != Shape{n}) return false;
    *bias = int_bias(g, *dqb, constant(g, (*dqx)->inputs[1])->data.f32()[0], sw->data);
    if (*bias == kNoValue) return false;
  }
  return true;
}

// Matches at QuantizeLinear `q` and adds the new values and weights to `g` (the rewrite proper
// happens once every match is found). False, with `g` untouched, otherwise.
bool match(Graph& g, int q, GemmMatch* m) {
  const int gi = quantised_anchor(g, q, OpKind::kGemm, &m->erased);
  if (gi < 0) return false;
  const Node gemm = g.nodes[static_cast<size_t>(gi)];
  const Node* dqx;
  const Node* dqw;
  ValueId bias;
  if (!gemm_operands(g, gemm, g.value(g.nodes[static_cast<size_t>(q)].outputs[0]).dtype, &dqx, &dqw, &bias))
    return false;
  const Tensor w = conv_weights(constant(g, dqw->inputs[0])->data, gemm.attr_i("transB") != 0);
  if (!fits_int32(g, *dqx, w, constant(g, dqw->inputs[2])->data, bias)) return false;
  const Node qn = g.nodes[static_cast<size_t>(q)];
  const ValueId xq = dqx->inputs[0], yq = qn.outputs[0];
  Node qc = make_node(OpKind::kQLinearConv, gemm.name, gemm.loc);
  qc.attrs["kernel_shape"].ints = {1, 1};  // in full: the lowering reads them as shape inference fills them
  qc.attrs["strides"].ints = qc.attrs["dilations"].ints = {1, 1};
  qc.attrs["pads"].ints = {0, 0, 0, 0};
  const int64_t rows = g.value(xq).shape[0], cols = w.shape()[0];
  const ValueId wq = add_initializer(g, unique_value_name(g, g.value(dqw->inputs[0]).name + ".1x1"), w, true, gemm.loc);
  const ValueId x4 = new_value(g, g.value(xq).name + ".1x1", g.value(xq).dtype, {rows, w.shape()[1], 1, 1}, gemm.loc);
  const ValueId y4 = new_value(g, g.value(yq).name + ".1x1", g.value(yq).dtype, {rows, cols, 1, 1}, gemm.loc);
  qc.inputs = {x4, dqx->inputs[1], dqx->inputs[2], wq, dqw->inputs[1], dqw->inputs[2], qn.inputs[1], qn.inputs[2]};
  if (bias != kNoValue) qc.inputs.push_back(bias);
  qc.outputs = {y4};
  m->nodes.push_back(reshape(gemm.name + "/as_1x1", gemm.loc, xq, x4, {0, 0, 1, 1}));
  m->nodes.push_back(std::move(qc));
  m->nodes.push_back(reshape(gemm.name + "/as_matrix", gemm.loc, y4, yq, {0, 0}));
  return true;
}

class QdqGemmPass : public Pass {
 public:
  const char* name() const override { return "qdq_gemm"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    g.rebuild_links();
    std::vector<bool> erase(g.nodes.size(), false);
    std::map<size_t, std::vector<Node>> at;  // QuantizeLinear index -> the nodes in its place
    std::string names;
    for (size_t i = 0; i < erase.size(); ++i) {
      GemmMatch m;
      if (g.nodes[i].op != OpKind::kQuantizeLinear || !match(g, static_cast<int>(i), &m)) continue;
      for (int e : m.erased) erase[static_cast<size_t>(e)] = true;
      if (at.size() < 4) names += (at.empty() ? "" : ", ") + m.nodes[1].name;
      at[i] = std::move(m.nodes);
    }
    if (at.empty()) return false;
    std::vector<Node> nodes;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto it = at.find(i);
      if (it != at.end())
        for (Node& n : it->second) nodes.push_back(std::move(n));
      else if (!erase[i])
        nodes.push_back(std::move(g.nodes[i]));
    }
    g.nodes = std::move(nodes);
    g.rebuild_links();
    note("qdq_gemm x" + std::to_string(at.size()) + " (" + names + (at.size() > 4 ? ", ...)" : ")"));
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qdq_gemm_pass() { return std::make_unique<QdqGemmPass>(); }

}  // namespace fusert
