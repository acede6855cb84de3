// The rewrite pass driver: sweeps every rule over every node, applies the non-overlapping
// matches, and repeats until a sweep finds none (each rewrite removes nodes, so it ends).
#include "graph/passes/pattern_rewrite.h"

#include <map>

#include "graph/passes/graph_edit.h"
#include "graph/passes/pass.h"

namespace fusert {

void RewriteRule::apply(Graph& g, RewriteMatch m) const {
  for (auto& [slot, value] : m.new_inputs) {
    value.name = unique_value_name(g, value.name);
    ValueId id = g.add_value(value.name);
    g.value(id) = std::move(value);
    if (m.replacement.inputs.size() <= slot) m.replacement.inputs.resize(slot + 1, kNoValue);
    m.replacement.inputs[slot] = id;
  }
  Node& root = g.nodes[static_cast<size_t>(m.root)];
  m.replacement.outputs = root.outputs;
  root = std::move(m.replacement);
}

namespace {

class PatternRewritePass : public Pass {
 public:
  explicit PatternRewritePass(std::vector<std::unique_ptr<RewriteRule>> rules) : rules_(std::move(rules)) {}
  const char* name() const override { return "pattern_rewrite"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    applied_.clear();
    bool changed = false;
    while (sweep(g)) changed = true;
    for (const auto& [rule, roots] : applied_) {
      std::string s = rule + " x" + std::to_string(roots.size()) + " (";
      for (size_t k = 0; k < roots.size() && k < 4; ++k) s += (k ? ", " : "") + roots[k];
      note(s + (roots.size() > 4 ? ", ...)" : ")"));
    }
    return changed;
  }

 private:
  bool sweep(Graph& g) {
    g.rebuild_links();  // the rules walk Value::producer/consumers
    std::vector<bool> claimed(g.nodes.size(), false), erased(g.nodes.size(), false);
    std::vector<std::pair<const RewriteRule*, RewriteMatch>> found;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (claimed[i]) continue;
      for (const auto& rule : rules_) {
        RewriteMatch m;
        if (!rule->matches(g, static_cast<int>(i), &m)) continue;
        bool overlaps = claimed[static_cast<size_t>(m.root)];
        for (int e : m.erased) overlaps = overlaps || claimed[static_cast<size_t>(e)];
        if (overlaps) continue;
        claimed[static_cast<size_t>(m.root)] = true;
        for (int e : m.erased) claimed[static_cast<size_t>(e)] = erased[static_cast<size_t>(e)] = true;
        found.emplace_back(rule.get(), std::move(m));
        break;
      }
    }
    if (found.empty()) return false;
    // Matching read the graph as it was; rewriting starts only now.
    for (auto& [rule, m] : found) {
      applied_[rule->name()].push_back(g.nodes[static_cast<size_t>(m.root)].name);
      rule->apply(g, std::move(m));
    }
    erase_nodes(g, erased);
    return true;
  }

  std::vector<std::unique_ptr<RewriteRule>> rules_;
  std::map<std::string, std::vector<std::string>> applied_;  // rule -> root node names
};

}  // namespace

std::unique_ptr<Pass> make_pattern_rewrite_pass(std::vector<std::unique_ptr<RewriteRule>> rules) {
  return std::make_unique<PatternRewritePass>(std::move(rules));
}

std::unique_ptr<Pass> make_pattern_rewrite_pass() {
  std::vector<std::unique_ptr<RewriteRule>> rules;
  rules.push_back(make_layer_norm_rule());
  rules.push_back(make_gelu_rule());
  rules.push_back(make_hardswish_rule());
  rules.push_back(make_hardsigmoid_swish_rule());
  rules.push_back(make_swish_rule());
  rules.push_back(make_qdq_pair_rule());
  return make_pattern_rewrite_pass(std::move(rules));
}

}  // namespace fusert
