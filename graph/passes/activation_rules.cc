// Activations exporters write as arithmetic, recognised so that a Conv/GEMM epilogue can carry
// them (the decomposed forms read x twice, which stops an epilogue at x):
//
// SiLU (EfficientNet, RegNet, YOLO): y = x * sigmoid(x), operands in either order, anchored at
// the Sigmoid, -> Swish(x) (alpha 1), bit for bit the same values (graph/base/unary_ops.def).
//
// Hard-swish, anchored at its Clip node:
//
//   Paddle, older PyTorch:  y = (x * clip(x + 3, 0, 6)) / 6      (or * 0.16666667)
//   a hard-sigmoid first:   y = x * (clip(x + 3, 0, 6) / 6)      (or * 0.16666667)
//   the HardSigmoid op:     y = x * HardSigmoid(x, alpha = 1/6, beta = 1/2)
//
// with the operands of every Add/Mul in either order, and clip's bounds as constant inputs
// (opset >= 11) or attributes. Replaced by HardSwish(x) = x * clip(x / 6 + 1/2, 0, 1) (ONNX
// opset 14). The two formulas agree to a few ULP (the rounding of /6 moves).
// Constants must be one-element f32 values within 1e-5 relative; intermediates read once inside
// the pattern and not graph outputs.
#include <cmath>

#include "graph/passes/match_util.h"
#include "graph/passes/pattern_rewrite.h"

namespace fusert {

namespace {

using match::is_scalar;
using match::other_input;
using match::producer;
using match::sole_consumer;

const Node& node_at(const Graph& g, int i) { return g.nodes[static_cast<size_t>(i)]; }

// Clip's bounds from its constant inputs or its attributes.
bool clip_bounds_are(const Graph& g, const Node& clip, double lo, double hi) {
  const bool lo_ok = clip.inputs.size() > 1 && clip.inputs[1] != kNoValue ? is_scalar(g, clip.inputs[1], lo, 0.0)
                                                                          : clip.attr_f("min") == lo;
  const bool hi_ok = clip.inputs.size() > 2 && clip.inputs[2] != kNoValue ? is_scalar(g, clip.inputs[2], hi, 0.0)
                                                                          : clip.attr_f("max") == hi;
  return lo_ok && hi_ok;
}

// `n` divides by 6 or multiplies by 1/6; the other operand is `*v`.
bool divides_by_six(const Graph& g, const Node& n, ValueId* v) {
  if (n.op == OpKind::kDiv && is_scalar(g, n.inputs[1], 6.0)) {
    *v = n.inputs[0];
    return true;
  }
  if (n.op != OpKind::kMul) return false;
  for (int j = 0; j < 2; ++j) {
    if (is_scalar(g, n.inputs[static_cast<size_t>(j)], 1.0 / 6.0)) {
      *v = n.inputs[static_cast<size_t>(1 - j)];
      return true;
    }
  }
  return false;
}

class HardSwishRule : public RewriteRule {
 public:
  const char* name() const override { return "hardswish"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& clip = node_at(g, anchor);
    if (clip.op != OpKind::kClip || !clip_bounds_are(g, clip, 0.0, 6.0)) return false;
    const ValueId u = clip.inputs[0];
    const int add = producer(g, u, OpKind::kAdd);
    if (add < 0 || sole_consumer(g, u) != anchor) return false;
    ValueId x = kNoValue;
    for (int j = 0; j < 2; ++j) {
      if (is_scalar(g, node_at(g, add).inputs[static_cast<size_t>(1 - j)], 3.0))
        x = node_at(g, add).inputs[static_cast<size_t>(j)];
    }
    if (x == kNoValue || g.value(x).dtype != DType::kF32) return false;
    const ValueId c = clip.outputs[0];
    const int n1 = sole_consumer(g, c);
    if (n1 < 0) return false;
    const Node& first = node_at(g, n1);
    ValueId v = kNoValue;
    int root = -1;
    if (first.op == OpKind::kMul && other_input(first, c) == x) {  // (x * c) / 6
      const ValueId p = first.outputs[0];
      const int d = sole_consumer(g, p);
      if (d < 0 || !divides_by_six(g, node_at(g, d), &v) || v != p) return false;
      root = d;
    } else if (divides_by_six(g, first, &v) && v == c) {  // x * (c / 6)
      const ValueId h = first.outputs[0];
      const int mul = sole_consumer(g, h, OpKind::kMul);
      if (mul < 0 || other_input(node_at(g, mul), h) != x) return false;
      root = mul;
    } else {
      return false;
    }
    const Node& r = node_at(g, root);
    if (g.value(r.outputs[0]).shape != g.value(x).shape) return false;  // no hidden broadcast
    m->erased = {add, anchor, n1};
    m->root = root;
    Node hs = make_node(OpKind::kHardSwish, r.name, r.loc);
    hs.inputs = {x};
    m->replacement = std::move(hs);
    return true;
  }
};

// x * f(x), operands in either order, anchored at f (a node of `op`, read by that Mul alone):
// fills m->erased and m->root and returns x, or kNoValue.
ValueId match_x_times_f(const Graph& g, int anchor, OpKind op, RewriteMatch* m) {
  const Node& f = node_at(g, anchor);
  if (f.op != op) return kNoValue;
  const ValueId x = f.inputs[0];
  const int mul = sole_consumer(g, f.outputs[0], OpKind::kMul);
  if (mul < 0 || g.value(x).dtype != DType::kF32) return kNoValue;
  const Node& r = node_at(g, mul);
  if (other_input(r, f.outputs[0]) != x || g.value(r.outputs[0]).shape != g.value(x).shape) return kNoValue;
  m->erased = {anchor};
  m->root = mul;
  return x;
}

// `op`(x) named after the Mul it replaces.
Node unary_at_root(const Graph& g, const RewriteMatch& m, OpKind op, ValueId x) {
  const Node& r = node_at(g, m.root);
  Node n = make_node(op, r.name, r.loc);
  n.inputs = {x};
  return n;
}

class SwishRule : public RewriteRule {
 public:
  const char* name() const override { return "swish"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const ValueId x = match_x_times_f(g, anchor, OpKind::kSigmoid, m);
    if (x == kNoValue) return false;
    m->replacement = unary_at_root(g, *m, OpKind::kSwish, x);
    m->replacement.attrs["alpha"].type = AttrType::kFloat;
    m->replacement.attrs["alpha"].f = 1.0;
    return true;
  }
};

// x * HardSigmoid(x) with alpha 1/6 and beta 1/2 (torchvision's MobileNetV3 exported by
// PyTorch at opsets before 14), operands in either order, anchored at the HardSigmoid.
class HardSigmoidSwishRule : public RewriteRule {
 public:
  const char* name() const override { return "hardswish"; }

  bool matches(const Graph& g, int anchor, RewriteMatch* m) const override {
    const Node& hs = node_at(g, anchor);
    if (hs.op != OpKind::kHardSigmoid) return false;
    if (std::abs(hs.attr_f("alpha") * 6.0 - 1.0) > 1e-5 || hs.attr_f("beta") != 0.5) return false;
    const ValueId x = match_x_times_f(g, anchor, OpKind::kHardSigmoid, m);
    if (x == kNoValue) return false;
    m->replacement = unary_at_root(g, *m, OpKind::kHardSwish, x);
    return true;
  }
};

}  // namespace

std::unique_ptr<RewriteRule> make_hardsigmoid_swish_rule() { return std::make_unique<HardSigmoidSwishRule>(); }
std::unique_ptr<RewriteRule> make_hardswish_rule() { return std::make_unique<HardSwishRule>(); }
std::unique_ptr<RewriteRule> make_swish_rule() { return std::make_unique<SwishRule>(); }

}  // namespace fusert
