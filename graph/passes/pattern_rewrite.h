// Pattern rules (ONNX Runtime's rewrite rules): a cheap, read-only matches() anchored at one
// node, and an apply() that replaces the matched subgraph by one node. The rewrite pass
// collects non-overlapping matches over the whole graph, applies them, and repeats until no
// rule matches. A rule that does not match leaves the graph alone; it never errors.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace fusert {

/// A matched subgraph: `root` is the node whose output survives (the replacement takes its
/// slot and writes the same values); `erased` are the other matched nodes. Every value they
/// produce other than the root's outputs must have no reader outside the match.
struct RewriteMatch {
  int root = -1;
  std::vector<int> erased;
  Node replacement;
  /// Initializers to add before rewriting: (input slot of `replacement`, value). E.g. a ones
  /// scale for a LayerNorm written without the final Mul.
  std::vector<std::pair<size_t, Value>> new_inputs;
};

class RewriteRule {
 public:
  virtual ~RewriteRule() = default;
  virtual const char* name() const = 0;
  /// True, with `m` filled, when the pattern anchored at node `anchor` matches. Reads only.
  virtual bool matches(const Graph& g, int anchor, RewriteMatch* m) const = 0;
  /// Rewrites one match: adds `new_inputs`, puts `replacement` in the root's slot. The erased
  /// nodes are removed by the caller once all matches of a sweep are applied (so indices stay
  /// valid meanwhile).
  virtual void apply(Graph& g, RewriteMatch m) const;
};

std::unique_ptr<RewriteRule> make_layer_norm_rule();
std::unique_ptr<RewriteRule> make_gelu_rule();
/// x * clip(x + 3, 0, 6) / 6 (and x * (clip(..) / 6)) -> HardSwish (activation_rules.cc).
std::unique_ptr<RewriteRule> make_hardswish_rule();
/// x * HardSigmoid(x, 1/6, 1/2) -> HardSwish (activation_rules.cc).
std::unique_ptr<RewriteRule> make_hardsigmoid_swish_rule();
/// x * sigmoid(x) -> Swish(x), alpha 1 (activation_rules.cc).
std::unique_ptr<RewriteRule> make_swish_rule();
/// QuantizeLinear -> DequantizeLinear of one scale and zero point -> FakeQuantize (qdq_rule.cc).
std::unique_ptr<RewriteRule> make_qdq_pair_rule();
/// DequantizeLinear -> Conv -> [Relu | Clip] -> QuantizeLinear -> QLinearConv (qdq_conv_rule.cc); runs
/// before constant folding, in a pass of its own (run_canonicalize).
std::unique_ptr<RewriteRule> make_qdq_conv_rule();
/// DequantizeLinear x 2 -> Add -> [Relu | Clip] -> QuantizeLinear -> QLinearAdd (qdq_add_rule.cc), in
/// the same pass.
std::unique_ptr<RewriteRule> make_qdq_add_rule();
/// DequantizeLinear -> MaxPool -> QuantizeLinear of one scale and zero point -> MaxPool of the 8-bit
/// values (qdq_maxpool_rule.cc), in the same pass.
std::unique_ptr<RewriteRule> make_qdq_maxpool_rule();

class Pass;
/// A rewrite pass over `rules`, tried in order at each node (make_pattern_rewrite_pass() in
/// graph/passes/pass.h is this with the LayerNorm and GELU rules).
std::unique_ptr<Pass> make_pattern_rewrite_pass(std::vector<std::unique_ptr<RewriteRule>> rules);

}  // namespace fusert
