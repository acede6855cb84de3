// Recognises scaled dot-product attention in its ONNX-export decomposition, for the compound
// strategy (planner) and for lowering the group to one attention kernel (runtime):
//
//   q [T, H*D] -> Reshape [B,S,H,D] -> Transpose(0,2,1,3) --------------+
//   k [T, H*D] -> Reshape [B,S,H,D] -> Transpose(0,2,3,1) -> MatMul(Qh, Kt) -> Div/Mul(scale)
//              -> Add(mask) -> Softmax(-1) -> MatMul(P, Vh) -> Transpose(0,2,1,3) -> Reshape [T, H*D]
//   v [T, H*D] -> Reshape [B,S,H,D] -> Transpose(0,2,1,3) --------------------------/
//
// (K may also be transposed as (0,2,1,3) then (0,1,3,2); scale and mask are optional.)
#pragma once

#include <vector>

#include "graph/fusion/group.h"
#include "graph/ir.h"

namespace fusert {

/// Matches the pattern around the Softmax node `softmax`; every intermediate must have a
/// single consumer and not be a graph output. Returns false when it does not match.
bool match_attention(const Graph& g, int softmax, AttentionMatch* m);

}  // namespace fusert
