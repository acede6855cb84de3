// An elementwise unary op read through a view moves in front of the view:
//
//   y = Gemm(a)  ->  r = Reshape(y)  ->  u = Gelu(r)      becomes
//   y = Gemm(a)  ->  u' = Gelu(y)    ->  u = Reshape(u')
//
// Exporters (and ONNX Runtime's MatMul + Add -> Gemm fusion, which wraps the Gemm in Reshapes)
// put a view between an anchor and its activation, and an epilogue cannot run through a view:
// ConvNeXt's MLP GELU ran as a pass of its own over the 4x-wide hidden activations, 30% of the
// model's time. In front of the view the unary is the anchor's epilogue. The values are the same
// (an elementwise op does not see shapes). Moved only when the view's source is read by the view
// alone (so the unary can join its producer), the view's output by the unary alone and not a
// graph output, and the unary keeps the dtype (not Cast).
#include "graph/passes/graph_edit.h"
#include "graph/passes/match_util.h"
#include "graph/passes/pass.h"

namespace fusert {

namespace {

// The unary consumer of view node `r` that may move in front of it, or -1.
int movable_unary(const Graph& g, const Node& r) {
  if (!is_alias_op(r.op) || r.inputs.empty() || r.outputs.size() != 1) return -1;
  const Value& x = g.value(r.inputs[0]);
  if (x.producer < 0 || x.consumers.size() != 1 || !x.shape_known || x.dtype != DType::kF32) return -1;
  const int u = match::sole_consumer(g, r.outputs[0]);
  if (u < 0) return -1;
  const Node& un = g.nodes[static_cast<size_t>(u)];
  if (op_info(un.op).pattern != PatternKind::kElementwise || is_alias_op(un.op) || un.op == OpKind::kCast) return -1;
  if (un.inputs.size() != 1 || un.outputs.size() != 1 || g.value(un.outputs[0]).dtype != x.dtype) return -1;
  return u;
}

class UnaryHoistPass : public Pass {
 public:
  const char* name() const override { return "unary_hoist"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    int moved = 0;
    std::string names;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const int u = movable_unary(g, g.nodes[i]);
      if (u < 0) continue;
      const ValueId x = g.nodes[i].inputs[0], out = g.nodes[static_cast<size_t>(u)].outputs[0];
      const ValueId mid = g.add_value(unique_value_name(g, g.value(out).name + ".before_view"));
      Value& m = g.value(mid);
      m.dtype = g.value(x).dtype;
      m.shape = g.value(x).shape;
      m.shape_known = true;
      m.loc = g.value(out).loc;
      Node unary = g.nodes[static_cast<size_t>(u)], view = g.nodes[i];
      unary.inputs = {x};
      unary.outputs = {mid};
      view.inputs[0] = mid;
      view.outputs = {out};
      if (moved < 4) names += (moved ? ", " : "") + unary.name;
      g.nodes[i] = std::move(unary);  // the view's slot: after x's producer
      g.nodes[static_cast<size_t>(u)] = std::move(view);
      g.rebuild_links();
      ++moved;
    }
    if (moved)
      note("moved " + std::to_string(moved) + " unary op(s) in front of a view (" + names +
           (moved > 4 ? ", ...)" : ")"));
    return moved > 0;
  }
};

}  // namespace

std::unique_ptr<Pass> make_unary_hoist_pass() { return std::make_unique<UnaryHoistPass>(); }

}  // namespace fusert
