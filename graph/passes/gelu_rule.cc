// Recognises decomposed GELU, anchored at its Erf or Tanh node:
//
//   exact (approximate=none):  y = x * 0.5 * (1 + erf(x / sqrt(2)))
//       x / sqrt(2) as Div(x, 1.41421356) or Mul(x, 0.70710678)
//   tanh (approximate=tanh):   y = x * 0.5 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//       x^3 as Pow(x, 3) or Mul(x, Mul(x, x)); sqrt(2/pi) = 0.7978845608
//
// and the common orderings of the outer product: (x * 0.5) * t, (x * t) * 0.5, (t * 0.5) * x,
// with t = 1 + erf(..) or 1 + tanh(..), operands of every Mul/Add in either order. Constants
// must be one-element f32 values within 1e-5 relative of the above (a different constant is
// a different function), intermediates read once inside the pattern and not graph outputs.
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"

namespace fusert {

namespace {

using match::is_scalar;
using match::other_input;
using match::producer;
using match::sole_consumer;

constexpr double kSqrt2 = 1.4142135623730951, kSqrt2OverPi = 0.7978845608028654, kTanhCubic = 0.044715;

const Node& node_at(const Graph& g, int i) { return g.nodes[static_cast<size_t>(i)]; }

// For a Mul node `n` with one input a scalar constant near `c`: the other input, else kNoValue.
ValueId mul_by_scalar(const Graph& g, const Node& n, double c) {
  if (n.op != OpKind::kMul) return kNoValue;
  if (is_scalar(g, n.inputs[1], c)) return n.inputs[0];
  if (is_scalar(g, n.inputs[0], c)) return n.inputs[1];
  return kNoValue;
}

class GeluRule : public RewriteRule {
 public:
  const char* name() const override { return "gelu"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& a = node_at(g, anchor);
    if (a.op != OpKind::kErf && a.op != OpKind::kTanh) return false;
    m->erased.clear();
    ValueId x = a.op == OpKind::kErf ? erf_argument(g, a, m) : tanh_argument(g, a, m);
    if (x == kNoValue || g.value(x).dtype != DType::kF32) return false;
    m->erased.push_back(anchor);
    if (!match_tail(g, x, a.outputs[0], m)) return false;
    const Node& root = node_at(g, m->root);
    if (g.value(root.outputs[0]).shape != g.value(x).shape) return false;  // no hidden broadcast
    Node gelu = make_node(OpKind::kGelu, root.name, root.loc);
    gelu.attrs["approximate"].s = a.op == OpKind::kErf ? "none" : "tanh";
    gelu.inputs = {x};
    m->replacement = std::move(gelu);
    return true;
  }

 private:
  // erf(u), u = x / sqrt(2) or x * (1 / sqrt(2)); returns x.
  static ValueId erf_argument(const Graph& g, const Node& erf, RewriteMatch* m) {
    const ValueId u = erf.inputs[0];
    const int p = g.value(u).producer;
    if (p < 0 || sole_consumer(g, u) < 0) return kNoValue;
    const Node& pn = node_at(g, p);
    ValueId x = kNoValue;
    if (pn.op == OpKind::kDiv && is_scalar(g, pn.inputs[1], kSqrt2)) x = pn.inputs[0];
    if (pn.op == OpKind::kMul) x = mul_by_scalar(g, pn, 1.0 / kSqrt2);
    if (x != kNoValue) m->erased.push_back(p);
    return x;
  }

  // tanh(sqrt(2/pi) * (x + 0.044715 * x^3)); returns x.
  static ValueId tanh_argument(const Graph& g, const Node& tanh, RewriteMatch* m) {
    const ValueId v = tanh.inputs[0];
    const int q = producer(g, v, OpKind::kMul);
    if (q < 0 || sole_consumer(g, v) < 0) return kNoValue;
    const ValueId inner = mul_by_scalar(g, node_at(g, q), kSqrt2OverPi);
    const int r = producer(g, inner, OpKind::kAdd);
    if (r < 0 || sole_consumer(g, inner) < 0) return kNoValue;
    for (int j = 0; j < 2; ++j) {  // Add(x, k) or Add(k, x)
      const ValueId x = node_at(g, r).inputs[static_cast<size_t>(j)],
                    k = node_at(g, r).inputs[static_cast<size_t>(1 - j)];
      const int kn = producer(g, k, OpKind::kMul);
      if (kn < 0 || sole_consumer(g, k) < 0) continue;
      const ValueId cube = mul_by_scalar(g, node_at(g, kn), kTanhCubic);
      std::vector<int> cube_nodes;
      if (cube == kNoValue || sole_consumer(g, cube) < 0 || !is_cube(g, cube, x, &cube_nodes)) continue;
      m->erased.insert(m->erased.end(), {q, r, kn});
      m->erased.insert(m->erased.end(), cube_nodes.begin(), cube_nodes.end());
      return x;
    }
    return kNoValue;
  }

  // c = Pow(x, 3) or Mul(x, Mul(x, x)) in either order.
  static bool is_cube(const Graph& g, ValueId c, ValueId x, std::vector<int>* nodes) {
    const int p = g.value(c).producer;
    if (p < 0) return false;
    const Node& n = node_at(g, p);
    if (n.op == OpKind::kPow && n.inputs[0] == x && is_scalar(g, n.inputs[1], 3.0, 0.0)) {
      nodes->push_back(p);
      return true;
    }
    if (n.op != OpKind::kMul) return false;
    const ValueId sq = other_input(n, x);
    const int s = producer(g, sq, OpKind::kMul);
    if (s < 0 || sole_consumer(g, sq) != p || node_at(g, s).inputs[0] != x || node_at(g, s).inputs[1] != x)
      return false;
    nodes->insert(nodes->end(), {p, s});
    return true;
  }

  // From e = erf(..)/tanh(..): t = 1 + e, then y = (x * 0.5) * t | (x * t) * 0.5 | (t * 0.5) * x.
  static bool match_tail(const Graph& g, ValueId x, ValueId e, RewriteMatch* m) {
    const int add = sole_consumer(g, e, OpKind::kAdd);
    if (add < 0 || !is_scalar(g, other_input(node_at(g, add), e), 1.0)) return false;
    const ValueId t = node_at(g, add).outputs[0];
    const int m1 = sole_consumer(g, t, OpKind::kMul);
    if (m1 < 0) return false;
    m->erased.push_back(add);
    const ValueId other = other_input(node_at(g, m1), t);
    const ValueId u = node_at(g, m1).outputs[0];
    if (other == x || is_scalar(g, other, 0.5)) {  // (x * t) * 0.5 or (t * 0.5) * x
      const int m2 = sole_consumer(g, u, OpKind::kMul);
      if (m2 < 0) return false;
      const ValueId last = other_input(node_at(g, m2), u);
      if (other == x ? !is_scalar(g, last, 0.5) : last != x) return false;
      m->erased.push_back(m1);
      m->root = m2;
      return true;
    }
    const int h = producer(g, other, OpKind::kMul);  // (x * 0.5) * t
    if (h < 0 || sole_consumer(g, other) != m1 || mul_by_scalar(g, node_at(g, h), 0.5) != x) return false;
    m->erased.push_back(h);
    m->root = m1;
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_gelu_rule() { return std::make_unique<GeluRule>(); }

}  // namespace fusert
