// The fusion cost model: decides whether a merge pays. Bytes of intermediate traffic saved,
// launches saved (a per-launch cost per backend), FLOPs per node and per branch (the 1:3
// imbalance rule), a register-pressure estimate per group (the depth table of
// docs/fusion-strategies.md), and the growth of peak activation memory.
#pragma once

#include <string>
#include <vector>

#include "graph/fusion/decision.h"
#include "graph/fusion/group.h"
#include "graph/ir.h"

namespace fusert {

/// Bytes of one value (numel * dtype size).
int64_t value_bytes(const Graph& g, ValueId v);

/// Multiply-adds counted as 2 FLOPs: Conv 2*N*M*OH*OW*(C/group)*KH*KW, Gemm/MatMul 2*M*N*K
/// (ONNX shapes), elementwise/reduction ops one FLOP per output element (transcendentals 8).
int64_t node_flops(const Graph& g, int node);

/// Roofline time estimate in ms of moving `bytes` and computing `flops` on machine `r`:
/// max(flops / peak, bytes / bandwidth).
double roofline_ms(const Roofline& r, double flops, double bytes);

/// Whether zero-padding a branch (extra_flops more work) pays for the traffic and launches a
/// merge removes, by the roofline estimate of `o`'s backend; the refusal names both sides in ms.
FusionDecision check_balancing_pays(const FusionOptions& o, int64_t extra_flops, int64_t bytes_saved,
                                    int launches_saved);

/// Register-pressure estimate of a fused group, in registers per thread: an anchor's
/// accumulator tile plus, per fused op, its live temporaries (transcendentals and tensor
/// operands cost more). The CUDA backend replaces it with nvJitLink's measured count.
int register_estimate(const Graph& g, const std::vector<int>& nodes);

/// The depth table's row for a group of `depth` ops: "low" (2), "medium" (3-4), "high" (5+).
const char* pressure_class(int depth);

/// Intermediate bytes a group removes: for every value produced and consumed only inside
/// the group and not written by it, its bytes once written plus once per read.
int64_t bytes_saved(const Graph& g, const std::vector<int>& nodes, const std::vector<ValueId>& outputs);

/// The 1:3 rule: ratio = max(flops_a, flops_b) / max(min(flops_a, flops_b), 1).
double imbalance_ratio(int64_t flops_a, int64_t flops_b);
FusionDecision check_imbalance(double ratio, double max_ratio, const std::string& what);

/// Peak live activation bytes of the node schedule in `order` when the values in `early`
/// become live at `early_at[i]` instead of at their producer (horizontal merges allocate every
/// member's output at the group's first member).
int64_t peak_live_bytes(const Graph& g, const std::vector<ValueId>& early, const std::vector<int>& early_at);

}  // namespace fusert
