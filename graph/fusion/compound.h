// Compound fusion: combinations of the other strategies over one region.
//
//   serial (vertical inside each branch, then horizontal across branches):
//     x -> [Gemm1 + LayerNorm1], x -> [Gemm2 + LayerNorm2], ...   (vertical groups)
//     ==> x -> [one GEMM on [W1; W2; ...], then each member's LayerNorm on its columns]
//   parallel (a Transformer block):
//     horizontal Q/K/V projection + vertical attention softmax(Q K^T * scale + mask) V (one
//     kernel over all heads, the head reshapes/transposes folded into its indexing) +
//     vertical FFN with GELU + residual + LayerNorm, grouped as one block region
//   residual block (ResNet-like "compound to finish"): the kernel groups between a split and
//     its residual join form one region in the plan.
//
// Legality: as the member strategies; for serial merges the members' epilogues must be the
// same op sequence; for attention every intermediate has one consumer and the pattern matches
// graph/fusion/attention_pattern.h exactly.
// Cost: serial merges save the member launches; attention removes the [B,H,S,S] score and
// probability tensors from memory (the largest intermediates of a Transformer block).
// Limits: regions are bookkeeping (parent groups); only serial merges and attention change
// the number of kernels. The source warns that compound kernels are hard to debug: each
// strategy is validated alone first (--ablation), then combined.
#pragma once

#include "graph/fusion/legality.h"

namespace fusert {

void run_compound(PlanState& st);

}  // namespace fusert
