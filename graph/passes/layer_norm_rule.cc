// Recognises a decomposed LayerNorm over the last axis (as exported from PyTorch/TF):
//
//   m = ReduceMean(x, axes=[-1], keepdims=1)        y = LayerNormalization(x, scale, bias,
//   d = Sub(x, m)                                          axis=-1, epsilon=eps)
//   v = ReduceMean(Pow(d, 2), axes=[-1], keepdims=1)
//   n = Div(d, Sqrt(Add(v, eps)))              =>  (x - E[x]) / sqrt(Var[x] + eps) * scale + bias,
//   y = Add(Mul(n, scale), bias)                   Var the population variance E[(x - E[x])^2]
//
// Required: both means over exactly the last axis with keepdims=1, the exponent the scalar 2,
// eps a one-element constant, every intermediate read only inside the pattern (d by the Pow
// and the Div; the rest once) and not a graph output. The trailing Mul/Add are absorbed only
// when the operand has exactly shape [C] (C = last dim of x); otherwise they stay as nodes
// after the LayerNorm (unit scale), which keeps the result exact. Mul/Add may take their
// operands in either order.
#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"

namespace fusert {

namespace {

using match::other_input;
using match::producer;
using match::sole_consumer;

bool reduces_last_axis(const Node& rm, size_t rank) {
  return rm.attr_i("keepdims") == 1 && rm.attr_ints("axes") == std::vector<int64_t>{static_cast<int64_t>(rank) - 1};
}

class LayerNormRule : public RewriteRule {
 public:
  const char* name() const override { return "layer_norm"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& rm1 = g.nodes[static_cast<size_t>(anchor)];
    if (rm1.op != OpKind::kReduceMean) return false;
    const ValueId x = rm1.inputs[0];
    const Value& xv = g.value(x);
    if (xv.dtype != DType::kF32 || xv.shape.empty() || !reduces_last_axis(rm1, xv.shape.size())) return false;
    // d = x - mean
    const int sub = sole_consumer(g, rm1.outputs[0], OpKind::kSub);
    if (sub < 0 || g.nodes[static_cast<size_t>(sub)].inputs[0] != x) return false;
    const ValueId d = g.nodes[static_cast<size_t>(sub)].outputs[0];
    const Value& dv = g.value(d);
    if (dv.is_graph_output || dv.shape != xv.shape || dv.consumers.size() != 2) return false;
    // (a node reading d twice, e.g. Mul(d, d), lists it twice and fails the search below)
    int pow = -1, div = -1;
    for (int c : dv.consumers) {
      const Node& n = g.nodes[static_cast<size_t>(c)];
      if (n.op == OpKind::kPow && n.inputs[0] == d && match::is_scalar(g, n.inputs[1], 2.0, 0.0)) pow = c;
      if (n.op == OpKind::kDiv && n.inputs[0] == d) div = c;
    }
    if (pow < 0 || div < 0) return false;
    // v = mean(d^2); std = sqrt(v + eps)
    const int rm2 = sole_consumer(g, g.nodes[static_cast<size_t>(pow)].outputs[0], OpKind::kReduceMean);
    if (rm2 < 0 || !reduces_last_axis(g.nodes[static_cast<size_t>(rm2)], xv.shape.size())) return false;
    const ValueId var = g.nodes[static_cast<size_t>(rm2)].outputs[0];
    const int add_eps = sole_consumer(g, var, OpKind::kAdd);
    if (add_eps < 0) return false;
    double eps;
    const Node& ae = g.nodes[static_cast<size_t>(add_eps)];
    if (!scalar_constant(g, other_input(ae, var), &eps) || g.value(ae.outputs[0]).shape != g.value(var).shape)
      return false;
    const int sqrt = sole_consumer(g, ae.outputs[0], OpKind::kSqrt);
    if (sqrt < 0 || sole_consumer(g, g.nodes[static_cast<size_t>(sqrt)].outputs[0]) != div) return false;
    const Node& dn = g.nodes[static_cast<size_t>(div)];
    if (dn.inputs[1] != g.nodes[static_cast<size_t>(sqrt)].outputs[0] || g.value(dn.outputs[0]).shape != xv.shape)
      return false;

    m->root = div;
    m->erased = {anchor, sub, pow, rm2, add_eps, sqrt};
    ValueId scale = kNoValue, bias = kNoValue;
    absorb_affine(g, xv.shape.back(), m, &scale, &bias);
    build(g, x, scale, bias, eps, m);
    return true;
  }

 private:
  // Extends the match over Mul(n, scale[C]) and/or Add(., bias[C]) after the Div.
  static void absorb_affine(const Graph& g, int64_t c, RewriteMatch* m, ValueId* scale, ValueId* bias) {
    // An operand computed inside the match (possible when x is rank 1) cannot be absorbed.
    auto per_channel = [&](ValueId v) {
      if (v == kNoValue || g.value(v).shape != Shape{c}) return false;
      const int p = g.value(v).producer;
      if (p == m->root) return false;
      for (int e : m->erased)
        if (p == e) return false;
      return true;
    };
    ValueId cur = g.nodes[static_cast<size_t>(m->root)].outputs[0];
    int mul = sole_consumer(g, cur, OpKind::kMul);
    if (mul >= 0 && per_channel(other_input(g.nodes[static_cast<size_t>(mul)], cur))) {
      *scale = other_input(g.nodes[static_cast<size_t>(mul)], cur);
      m->erased.push_back(m->root);
      m->root = mul;
      cur = g.nodes[static_cast<size_t>(mul)].outputs[0];
    }
    int add = sole_consumer(g, cur, OpKind::kAdd);
    if (add >= 0 && per_channel(other_input(g.nodes[static_cast<size_t>(add)], cur))) {
      *bias = other_input(g.nodes[static_cast<size_t>(add)], cur);
      m->erased.push_back(m->root);
      m->root = add;
    }
  }

  static void build(const Graph& g, ValueId x, ValueId scale, ValueId bias, double eps, RewriteMatch* m) {
    const Node& root = g.nodes[static_cast<size_t>(m->root)];
    const Shape& xs = g.value(x).shape;
    Node ln = make_node(OpKind::kLayerNormalization, root.name, root.loc);
    ln.attrs["axis"].i = static_cast<int64_t>(xs.size()) - 1;  // canonical (non-negative) form
    ln.attrs["epsilon"].f = eps;
    ln.inputs = {x, scale};
    if (bias != kNoValue) ln.inputs.push_back(bias);
    if (scale == kNoValue) {  // LayerNormalization requires a scale: a unit one
      Value ones;
      ones.name = root.name + ".ln_unit_scale";
      ones.shape = {xs.back()};
      ones.shape_known = ones.is_initializer = ones.is_constant = true;
      ones.data = Tensor(DType::kF32, ones.shape);
      for (int64_t i = 0; i < xs.back(); ++i) ones.data.f32()[i] = 1.f;
      ones.loc = root.loc;
      m->new_inputs.emplace_back(1, std::move(ones));
    }
    m->replacement = std::move(ln);
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_layer_norm_rule() { return std::make_unique<LayerNormRule>(); }

}  // namespace fusert
