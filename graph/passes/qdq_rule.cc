// A QuantizeLinear read only by a DequantizeLinear of the same scale and zero point (every
// activation of a QDQ model: ONNX Runtime's quantize_static writes x -> Q -> DQ -> next op),
// anchored at the DequantizeLinear, per tensor:
//
//   x -> QuantizeLinear(s, z) -> i8/u8 -> DequantizeLinear(s, z) -> y
//     =>  x -> FakeQuantize(scale s, low lo - z) -> y      (lo = -128 for i8, 0 for u8)
//
// FakeQuantize (graph/base/unary_ops.def) computes the same bits as the two ops and is an
// elementwise op, so it runs in the epilogue of the anchor before it (Conv, GEMM) instead of two
// passes over memory and an int8 tensor in between. Scales and zero points must be constants of
// one element, equal in value on both sides; the int8 value must have no other reader and not be
// a graph output.
#include <cmath>
#include <cstring>

#include "graph/base/quant_math.h"
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"

namespace fusert {

namespace {

using match::producer;
using match::sole_consumer;

// The one-element constant `v` (f32 scale, i8 / u8 zero point) as a double; false otherwise.
bool one_value(const Graph& g, ValueId v, double* out) {
  if (v == kNoValue) {
    *out = 0;  // an absent zero point is 0
    return true;
  }
  const Tensor* t = fixed_data(g, v);
  if (!t || t->numel() != 1) return false;
  if (t->dtype() == DType::kF32) {
    *out = t->f32()[0];
    return true;
  }
  if (t->dtype() != DType::kI8 && t->dtype() != DType::kU8) return false;
  *out = quant::value_at(*t, 0);
  return true;
}

ValueId input_at(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

class QdqPairRule : public RewriteRule {
 public:
  const char* name() const override { return "qdq_pair"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& dq = g.nodes[static_cast<size_t>(anchor)];
    if (dq.op != OpKind::kDequantizeLinear) return false;
    const int qi = producer(g, dq.inputs[0], OpKind::kQuantizeLinear);
    if (qi < 0 || sole_consumer(g, dq.inputs[0]) != anchor) return false;
    const Node& q = g.nodes[static_cast<size_t>(qi)];
    double qs, qz, ds, dz;
    if (!one_value(g, q.inputs[1], &qs) || !one_value(g, input_at(q, 2), &qz) || !one_value(g, dq.inputs[1], &ds) ||
        !one_value(g, input_at(dq, 2), &dz))
      return false;
    // the same scale and zero point (bit for bit: a different scale is a different function)
    if (qs != ds || qz != dz || !(qs > 0) || !std::isfinite(qs)) return false;
    const float scale = static_cast<float>(qs);
    if (static_cast<double>(scale) != qs) return false;
    m->root = anchor;
    m->erased = {qi};
    Node fq = make_node(OpKind::kFakeQuantize, dq.name, dq.loc);
    fq.attrs["scale"].f = qs;
    const double lo = g.value(dq.inputs[0]).dtype == DType::kI8 ? -128 : 0;
    fq.attrs["low"].f = lo - qz;
    fq.inputs = {q.inputs[0]};
    m->replacement = std::move(fq);
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_qdq_pair_rule() { return std::make_unique<QdqPairRule>(); }

}  // namespace fusert
