// A MaxPool between a DequantizeLinear and a QuantizeLinear of the same scale and zero point (a QDQ
// model's pooling), anchored at the QuantizeLinear:
//
//   xq -> DQ(s, z) -> MaxPool -> Q(s, z) -> yq     =>     xq -> MaxPool -> yq (of 8-bit values)
//
// The same bits: the max commutes with the increasing dequantisation, a window's maximum is one of
// its values, and QuantizeLinear of a dequantised 8-bit v with the same scale and zero point is v
// ((v - z) * s / s rounds back to the integer v - z); a window of padding alone is -inf in f32, which
// QuantizeLinear saturates to the type's minimum, what the 8-bit kernel writes. Conditions: per
// tensor, the same positive scale (a negative one reverses the order: the max of the 8-bit values
// would be the min of the real ones) and zero point (value and type), the MaxPool's output read only by the
// QuantizeLinear (no activation between). The DequantizeLinear stays for other readers.
#include "graph/base/quant_math.h"
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"
#include "graph/passes/qdq_match.h"

namespace fusert {

namespace {

using namespace qdq;

bool is_8bit(DType t) { return t == DType::kI8 || t == DType::kU8; }

// Both per tensor with a zero point, of one scale and one zero point of one type.
bool same_quantisation(const Graph& g, const Node& dq, const Node& q) {
  if (!per_tensor(g, dq) || !per_tensor(g, q) || dq.inputs.size() < 3 || q.inputs.size() < 3) return false;
  const Tensor& zd = constant(g, dq.inputs[2])->data;
  const Tensor& zq = constant(g, q.inputs[2])->data;
  const float s = constant(g, dq.inputs[1])->data.f32()[0];
  return s > 0.f && s == constant(g, q.inputs[1])->data.f32()[0] &&  // > 0: the dequantisation increases
         zd.dtype() == zq.dtype() && quant::value_at(zd, 0) == quant::value_at(zq, 0);
}

class QdqMaxPoolRule : public RewriteRule {
 public:
  const char* name() const override { return "qdq_maxpool"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& q = g.nodes[static_cast<size_t>(anchor)];
    if (q.op != OpKind::kQuantizeLinear) return false;
    const int pi = match::producer(g, q.inputs[0], OpKind::kMaxPool);
    if (pi < 0 || match::sole_consumer(g, q.inputs[0]) != anchor) return false;
    const Node& pool = g.nodes[static_cast<size_t>(pi)];
    const Node* dq = dq_of(g, pool.inputs[0]);
    if (!dq || !same_quantisation(g, *dq, q) || !is_8bit(g.value(dq->inputs[0]).dtype)) return false;
    if (g.value(dq->inputs[0]).dtype != constant(g, q.inputs[2])->data.dtype()) return false;
    m->erased = {pi};
    m->root = anchor;
    Node mp = make_node(OpKind::kMaxPool, pool.name, pool.loc);
    mp.attrs = pool.attrs;
    mp.inputs = {dq->inputs[0]};
    m->replacement = std::move(mp);
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_qdq_maxpool_rule() { return std::make_unique<QdqMaxPoolRule>(); }

}  // namespace fusert
