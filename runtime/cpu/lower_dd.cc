// The data-dependent ops (graph/data_dependent.h) are never lowered to a step: a session splits
// the graph at them and runs them on the host between its execution stages (runtime/staged.h).
// Reaching one here is a bug in that split.
#include "graph/data_dependent.h"
#include "runtime/execution_plan.h"

namespace fusert {

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step&)

namespace {

Status between_stages(const Graph& g, int ni) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  return error(StatusCode::kInternal) << n.loc.str() << ": " << op_name(n.op) << " '" << n.name
                                      << "' runs on the host between execution stages "
                                      << "(runtime/staged.h), not as a step of one";
}

}  // namespace

LOWER(NonZero) { return between_stages(g, ni); }
LOWER(NonMaxSuppression) { return between_stages(g, ni); }
LOWER(Unique) { return between_stages(g, ni); }
LOWER(Compress) { return between_stages(g, ni); }
LOWER(Range) { return between_stages(g, ni); }
LOWER(DynamicSlice) { return between_stages(g, ni); }
LOWER(DynamicReshape) { return between_stages(g, ni); }
LOWER(DynamicExpand) { return between_stages(g, ni); }
LOWER(If) { return between_stages(g, ni); }
LOWER(Loop) { return between_stages(g, ni); }

}  // namespace fusert
