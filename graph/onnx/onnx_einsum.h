// ONNX Einsum as Transpose, ReduceSum, Reshape and MatMul (internal to graph/onnx), so that each
// contraction runs on the GEMM kernels and fuses as a MatMul does.
#pragma once

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// The nodes of Einsum `np` (one or more inputs, already in `g`). The equation's operands are
/// contracted left to right, two at a time: letters only one side needs later are summed first
/// (ReduceSum), batch letters (both sides, needed later) lead, the product is one MatMul of
/// [batch.., M, K] x [batch.., K, N] between Reshapes, and a Transpose puts the output's letters
/// in order. "..." stands for the leading dims an operand has beyond its letters; an output
/// without "->" has the letters that occur once, in alphabetical order (ONNX's implicit form).
/// Errors (kUnsupported at `loc`): a letter repeated in one operand (a diagonal); kShapeMismatch:
/// an operand's rank unlike its letters, a letter with two sizes; kParseError: a malformed equation.
Result<Expansion> einsum(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc);

}  // namespace fusert::onnx_import
