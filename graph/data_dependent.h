// Data-dependent output shapes: ops whose output size is known only once they have run
// (NonZero, NonMaxSuppression, Unique, Compress, TopK with a K computed at run time, a Loop's scan
// outputs, whose first dim is its iteration count). Their
// count is a symbolic dim named '<node>.n'; the graph is shaped at a value of it (the node's
// `count` attribute). A session splits such a graph into execution stages: stage 0 is every
// node that does not depend on a count; a data-dependent node runs on the host after the stage
// its inputs come from; the nodes that read its outputs (directly or through others) form the
// next stage, planned and fused on their own and shaped, per run, at the count it returned.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/loader/model_loader.h"

namespace fusert {

/// True when `n`'s output size depends on its input data (see above).
bool is_data_dependent(const Graph& g, const Node& n);

/// True for a node a session runs on the host between execution stages: a data-dependent node,
/// an If whose condition is known at run time only (the op If; graph/onnx/onnx_if.h), a Loop
/// not unrolled at import (the op Loop; graph/onnx/onnx_loop.h).
bool is_stage_boundary(const Graph& g, const Node& n);

/// The name of input `k` of the body model of the op Loop (graph/onnx/onnx_loop.h):
/// "#loop.iteration" (0, one int64), "#loop.condition" (1, one bool), "#loop.carried<j>" (2 + j);
/// the outer values it reads follow under their own names.
std::string loop_body_input(size_t k);

/// True for a data-dependent op whose whole output shape is computed at run time (a Reshape or
/// Expand whose shape input is: DynamicReshape, DynamicExpand): one count per output dim.
bool is_shape_computed(const Node& n);

/// The symbolic dims of a data-dependent node's counts: "<node name>.n"; for an op whose shape
/// is computed (is_shape_computed), one per output dim: "<node name>.n0", ".n1", ... (its
/// shape input's length `g` gives their number; Expand: at least the input's rank).
std::vector<std::string> dd_dim_names(const Graph& g, const Node& n);

/// The largest count `n` can return given its input shapes, or -1 for none (NonZero: X's size;
/// NonMaxSuppression: batches x classes x boxes, or x a constant per-class limit; Unique, TopK:
/// the length along the axis; Compress: that or the condition's length, the smaller).
int64_t dd_count_bound(const Graph& g, const Node& n);

/// Shapes data-dependent node `n` (its inputs' shapes known): sets its `count` attribute (an op
/// whose shape is computed: `counts`, one per output dim) to its dim's value in `at` when given
/// there, else to a default (16; a computed shape: the input's own shape where the ranks agree,
/// its leading dims merged into the first where there are fewer, 1s before it where more);
/// either at most dd_count_bound (when above 0) and at least 1, except a 0 given in `at` (the
/// shapes of an empty count). Returns the dims
/// (SymbolicDim::data_dependent: min 0, open, probed at another value).
std::vector<SymbolicDim> shape_counts(const Graph& g, Node& n, const DimValues* at);

/// Which stage each node runs in.
struct Stages {
  /// Per node: its stage; for a stage boundary (is_stage_boundary), the stage after which it
  /// runs (its outputs belong to the next one).
  std::vector<int> node_stage;
  std::vector<int> dd_nodes;  ///< the stage boundaries, in graph order
  int count = 1;              ///< number of stages (1 + the longest chain of data-dependent nodes)
  bool settled = true;        ///< false: a count is needed before its own op runs (no valid order)
};

/// Constants folded from a data-dependent output (a Shape of it, arithmetic on that), by value:
/// the counts (dim names) they depend on. A node reading one runs after the op of that count.
using CountConstants = std::map<ValueId, std::vector<std::string>>;

/// The stages of `g` (topologically sorted; `consts`: what its constants depend on).
Stages split_stages(const Graph& g, const CountConstants& consts = {});

/// Stage `s` as a graph of its own: its nodes, the constants they read, as inputs every value
/// they read from outside (a graph input, an earlier stage's output, a data-dependent node's
/// output), as outputs every value they compute that the graph outputs or another stage or a
/// data-dependent node reads. Values keep their names; the order is deterministic (a model
/// expanded at other dims cuts into the same structure).
Graph cut_stage(const Graph& g, const Stages& st, int s);

}  // namespace fusert
