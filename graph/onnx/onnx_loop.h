// ONNX Loop (internal to graph/onnx; a case of onnx_expand.h). A loop whose trip count and
// condition are constants and whose body passes its condition through is unrolled at import:
// that many copies of the body, each a plain part of the graph (planned and fused as any other),
// scan outputs the iterations' values stacked along a new first axis. Any other loop (a trip
// count or condition known at run time, a body that computes its condition, more than
// kMaxUnrolled iterations) becomes the op Loop, run between execution stages
// (runtime/staged.h): its body a model of its own, run once per iteration as a session; its scan
// outputs' first dim the iteration count, a data-dependent dim '<node>.n'.
#pragma once

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The most iterations unrolled.
constexpr int64_t kMaxUnrolled = 1024;
/// The most iterations unrolled with scan outputs (stacked by one Concat, of at most 64 inputs;
/// a scan output declared other than float also makes the op Loop).
constexpr int64_t kMaxStacked = 64;

/// The expansion of Loop `np` (inputs already in `g`; `opset` the model's, for the body as a
/// model of its own). Errors at `loc`: kParseError (a body missing or with the wrong number of
/// inputs or outputs, reading a value not defined); for the op Loop, those of importing the
/// body at the carried values' shapes, kShapeMismatch (a condition output that is not one bool)
/// and kUnsupported (a carried value whose shape or dtype the body changes).
Result<Expansion> loop_expanded(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                const SourceLoc& loc, int64_t opset);

}  // namespace fusert::onnx_import
