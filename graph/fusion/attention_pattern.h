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

#include "graph/ir.h"

namespace fusert {

struct AttentionMatch {
  std::vector<int> nodes;                            ///< every node of the pattern, topological order
  ValueId q = kNoValue, k = kNoValue, v = kNoValue;  ///< token-major [B*S, H*D] (or [B,S,H*D])
  ValueId mask = kNoValue;                           ///< additive mask, broadcast to [B,H,S,S]
  ValueId out = kNoValue;                            ///< token-major result
  float scale = 1.f;
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  int64_t mask_b_stride = 0, mask_i_stride = 0;  ///< element strides of the mask (0 = broadcast)
};

/// Matches the pattern around the Softmax node `softmax`; every intermediate must have a
/// single consumer and not be a graph output. Returns false when it does not match.
bool match_attention(const Graph& g, int softmax, AttentionMatch* m);

}  // namespace fusert
