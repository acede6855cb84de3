// Dead-code elimination: drops nodes none of whose results reach a graph output, then every
// value no remaining node touches (orphaned intermediates, unused initializers and constants).
// Graph inputs always stay: they are the model's interface, read or not.
#include "graph/passes/graph_edit.h"
#include "graph/passes/pass.h"

namespace fusert {

namespace {

class DeadCodePass : public Pass {
 public:
  const char* name() const override { return "dead_code"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    size_t nodes_before = g.nodes.size(), values_before = g.values.size();
    erase_dead_nodes(g);
    compact_values(g);
    bool changed = g.nodes.size() != nodes_before || g.values.size() != values_before;
    if (changed) {
      note("removed " + std::to_string(nodes_before - g.nodes.size()) + " nodes, " +
           std::to_string(values_before - g.values.size()) + " values");
    }
    return changed;
  }

 private:
  // Backward sweep in reverse topological order: a node is live when any output is needed.
  static void erase_dead_nodes(Graph& g) {
    std::vector<bool> needed(g.values.size(), false), dead(g.nodes.size(), false);
    for (ValueId o : g.outputs) needed[static_cast<size_t>(o)] = true;
    for (size_t i = g.nodes.size(); i-- > 0;) {
      const Node& n = g.nodes[i];
      bool live = false;
      for (ValueId out : n.outputs) live = live || needed[static_cast<size_t>(out)];
      dead[i] = !live;
      if (!live) continue;
      for (ValueId in : n.inputs) {
        if (in != kNoValue) needed[static_cast<size_t>(in)] = true;
      }
    }
    erase_nodes(g, dead);
  }

  // Keeps graph inputs, graph outputs and every value a node reads or writes; remaps ids.
  static void compact_values(Graph& g) {
    std::vector<bool> keep(g.values.size(), false);
    for (ValueId v : g.inputs) keep[static_cast<size_t>(v)] = true;
    for (ValueId v : g.outputs) keep[static_cast<size_t>(v)] = true;
    for (const Node& n : g.nodes) {
      for (ValueId v : n.inputs) {
        if (v != kNoValue) keep[static_cast<size_t>(v)] = true;
      }
      for (ValueId v : n.outputs) keep[static_cast<size_t>(v)] = true;
    }
    std::vector<ValueId> remap(g.values.size(), kNoValue);
    std::vector<Value> kept;
    for (size_t i = 0; i < g.values.size(); ++i) {
      if (!keep[i]) continue;
      remap[i] = static_cast<ValueId>(kept.size());
      kept.push_back(std::move(g.values[i]));
    }
    if (kept.size() == g.values.size()) {
      g.values = std::move(kept);
      return;
    }
    g.values = std::move(kept);
    auto fix = [&](std::vector<ValueId>& ids) {
      for (ValueId& v : ids) {
        if (v != kNoValue) v = remap[static_cast<size_t>(v)];
      }
    };
    fix(g.inputs);
    fix(g.outputs);
    for (Node& n : g.nodes) {
      fix(n.inputs);
      fix(n.outputs);
    }
    g.rebuild_links();
  }
};

}  // namespace

std::unique_ptr<Pass> make_dead_code_pass() { return std::make_unique<DeadCodePass>(); }

}  // namespace fusert
