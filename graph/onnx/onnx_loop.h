// ONNX Loop unrolled at import (internal to graph/onnx; a case of onnx_expand.h): a loop whose
// trip count and condition are constants and whose body passes its condition through runs as
// that many copies of the body, each a plain part of the graph (planned and fused as any other);
// scan outputs are the iterations' values stacked along a new first axis.
#pragma once

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The most iterations unrolled.
constexpr int64_t kMaxUnrolled = 1024;

/// The expansion of Loop `np` (inputs already in `g`). Errors (kUnsupported at `loc`): a trip
/// count or condition not constant, no trip count with a true condition, more than kMaxUnrolled
/// iterations, a body whose condition output is not its condition input passed through, zero
/// iterations with scan outputs (a zero-size tensor); kParseError: a body missing or with the
/// wrong number of inputs or outputs.
Result<Expansion> loop_unrolled(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                const SourceLoc& loc);

}  // namespace fusert::onnx_import
