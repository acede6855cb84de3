// A convolution between DequantizeLinears and a QuantizeLinear (a QDQ model's conv, as ONNX
// Runtime's quantize_static writes it), anchored at the QuantizeLinear:
//
//   xq -> DQ(sx, zx) ----+
//   wq -> DQ(sw, zw) ----+--> Conv -> [Relu | Clip(lo, hi)] -> Q(sy, zy) -> yq
//   bq -> DQ(sx * sw) ---+
//     =>  xq -> QLinearConv(sx, zx, wq, sw, zw, sy, zy, bq) -> yq
//
// ONNX Runtime reads the same pattern as its QLinearConv: the accumulator exact in int32, the bias
// added in int32, one requantisation (x_scale * w_scale / y_scale). The int8 value then flows from
// kernel to kernel. Taken only where ONNX Runtime fuses it, so that the two give the same bits
// (elsewhere both run the f32 ops): x and y of one type, an int8 x with int8 w (qdq::ort_types); a
// Relu or Clip only where ONNX Runtime drops it as redundant with y's range (a Relu before a zero
// point at the type's lowest value, a Clip wider than y's range: qdq::ort_drops_activation; what
// quantize_static writes). Run before constant folding (the weights' DequantizeLinear would fold
// into f32). Further conditions: 2-D; x, y per tensor; w per tensor
// or per output channel (axis 0), a constant; the bias absent or a constant int32 whose scale is
// x_scale * w_scale (to 1e-6: quantisers round that product their own way), its zero point 0; scales and zero points
// constants, finite and non-zero; no accumulator beyond int32 (the kernels would wrap, the f32 ops do
// not); the Conv's and the activation's outputs read only along the pattern. The DequantizeLinears stay for other
// readers (dead-code elimination removes them otherwise).
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"
#include "graph/passes/qdq_match.h"

namespace fusert {

namespace {

using namespace qdq;

class QdqConvRule : public RewriteRule {
 public:
  const char* name() const override { return "qdq_conv"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& q = g.nodes[static_cast<size_t>(anchor)];
    m->erased.clear();
    const int ci = quantised_anchor(g, anchor, OpKind::kConv, &m->erased);
    if (ci < 0) return false;
    const Node& conv = g.nodes[static_cast<size_t>(ci)];
    if (g.value(conv.inputs[0]).shape.size() != 4) return false;
    const Node* dqx = dq_of(g, conv.inputs[0]);
    const Node* dqw = dq_of(g, conv.inputs[1]);
    if (!dqx || !dqw || !per_tensor(g, *dqx) || dqx->inputs.size() < 3 || !constant(g, dqw->inputs[0])) return false;
    for (ValueId v : {dqx->inputs[0], dqw->inputs[0]}) {  // 8-bit operands (DequantizeLinear also takes int32)
      const DType t = g.value(v).dtype;
      if (t != DType::kI8 && t != DType::kU8) return false;
    }
    if (!ort_types(g.value(dqx->inputs[0]).dtype, g.value(dqw->inputs[0]).dtype, g.value(q.outputs[0]).dtype))
      return false;
    const Value* sw = constant(g, dqw->inputs[1]);
    const Value* zw = dqw->inputs.size() > 2 ? constant(g, dqw->inputs[2]) : nullptr;
    if (!sw || !usable_scales(sw->data) || !zw) return false;
    const int64_t out_ch = g.value(dqw->inputs[0]).shape[0];
    if (sw->data.numel() != 1 && (sw->data.numel() != out_ch || dqw->attr_i("axis") != 0)) return false;
    ValueId bias = kNoValue;
    if (conv.inputs.size() > 2 && conv.inputs[2] != kNoValue) {
      const Node* dqb = dq_of(g, conv.inputs[2]);
      const float sx = constant(g, dqx->inputs[1])->data.f32()[0];
      bias = dqb ? int_bias(g, *dqb, sx, sw->data) : kNoValue;
      if (bias == kNoValue) return false;
    }
    if (!fits_int32(g, *dqx, constant(g, dqw->inputs[0])->data, constant(g, dqw->inputs[2])->data, bias)) return false;
    m->root = anchor;
    Node qc = make_node(OpKind::kQLinearConv, conv.name, conv.loc);
    for (const char* a : {"kernel_shape", "strides", "pads", "dilations", "group", "auto_pad"})
      qc.attrs[a] = conv.attrs.at(a);
    qc.inputs = {dqx->inputs[0], dqx->inputs[1], dqx->inputs[2], dqw->inputs[0],
                 dqw->inputs[1], dqw->inputs[2], q.inputs[1],    q.inputs[2]};
    if (bias != kNoValue) qc.inputs.push_back(bias);
    m->replacement = std::move(qc);
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_qdq_conv_rule() { return std::make_unique<QdqConvRule>(); }

}  // namespace fusert
