// ONNX Scan (opset 9+; internal to graph/onnx; a case of onnx_expand.h) imported as the Loop it
// is: M = the scan length (the scan inputs' length along their axes, known at import), the states
// carried, each scan input's slice read in the body by a Gather at the iteration number (or at
// M - 1 - it, reversed), the scan outputs stacked by the Loop and then reversed (Slice, step -1)
// or moved to their axis (Transpose). The Loop runs between stages (onnx_loop.h), never unrolled:
// its length is usually a symbolic dim (a sequence), and unrolling would change the graph per size.
#pragma once

#include <string>

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The expansion of Scan `np` (inputs already in `g`). Errors at `loc`: kUnsupported (opset 8's
/// Scan with a batch axis and sequence_lens); kParseError (no body, counts of inputs, outputs,
/// axes or directions that do not match the body); kShapeMismatch (scan inputs of different
/// lengths, an axis out of range).
Result<Expansion> scan_as_loop(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc,
                               int64_t opset);

}  // namespace fusert::onnx_import
