// A residual Add between DequantizeLinears and a QuantizeLinear (a QDQ model's skip connection),
// anchored at the QuantizeLinear:
//
//   aq -> DQ(sa, za) --+
//                      +--> Add -> [Relu | Clip] -> Q(sy, zy) -> yq
//   bq -> DQ(sb, zb) --+
//     =>  aq, bq -> QLinearAdd(sa, za, sb, zb, sy, zy; act_min, act_max) -> yq
//
// One pass over int8 in and out instead of four (two DequantizeLinears, the Add, the QuantizeLinear),
// in ONNX Runtime's f32 arithmetic for the pattern (kernels/cpu/quantize.cc qlinear_add: its fused
// kernel's where it fuses one, else the four ops' own, which round differently next to a tie).
// Conditions: every scale and zero point a constant of one value (scales finite and non-zero); A and B 8-bit and of the
// output's shape (no broadcast); the Add's and the activation's outputs read only along the pattern. The
// DequantizeLinears stay for other readers.
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"
#include "graph/passes/qdq_match.h"

namespace fusert {

namespace {

using namespace qdq;

bool int8_input(const Graph& g, const Node* dq) {
  if (!dq || !per_tensor(g, *dq) || dq->inputs.size() < 3) return false;
  const DType t = g.value(dq->inputs[0]).dtype;
  return t == DType::kI8 || t == DType::kU8;
}

class QdqAddRule : public RewriteRule {
 public:
  const char* name() const override { return "qdq_add"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    double lo, hi;
    m->erased.clear();
    const int ai = quantised_producer(g, anchor, OpKind::kAdd, &lo, &hi, &m->erased);
    if (ai < 0) return false;
    const Node& add = g.nodes[static_cast<size_t>(ai)];
    const Node* da = dq_of(g, add.inputs[0]);
    const Node* db = dq_of(g, add.inputs[1]);
    if (!int8_input(g, da) || !int8_input(g, db)) return false;
    const Shape& y = g.value(add.outputs[0]).shape;
    if (g.value(add.inputs[0]).shape != y || g.value(add.inputs[1]).shape != y) return false;
    const Node& q = g.nodes[static_cast<size_t>(anchor)];
    m->root = anchor;
    Node qa = make_node(OpKind::kQLinearAdd, add.name, add.loc);
    qa.attrs["act_min"].f = lo;
    qa.attrs["act_max"].f = hi;
    qa.inputs = {da->inputs[0], da->inputs[1], da->inputs[2], db->inputs[0],
                 db->inputs[1], db->inputs[2], q.inputs[1],   q.inputs[2]};
    m->replacement = std::move(qa);
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_qdq_add_rule() { return std::make_unique<QdqAddRule>(); }

}  // namespace fusert
