// Register pressure as fusion rules: a vertical chain grown by one op (grown.back()) is refused,
// with the numbers, when its kernel would need too many registers. The CPU prices it with the
// estimate of the depth table (register_estimate, docs/fusion-strategies.md); a backend that
// measures (CUDA: FusionOptions::measure_registers, nvJitLink's counts for sm_90) replaces the
// estimate with its measurement.
#pragma once

#include <vector>

#include "graph/fusion/decision.h"
#include "graph/fusion/group.h"
#include "graph/ir.h"

namespace fusert {

/// The estimate against FusionOptions::register_budget, from depth 5 on; yes where the backend
/// measures instead.
FusionDecision check_register_estimate(const FusionOptions& opt, const Graph& g, const std::vector<int>& grown);

/// The measured registers and spills of the grown chain's kernel (of kind `kind`) against
/// FusionOptions::measured_register_budget. A split only helps when the pieces are lighter: it
/// refuses when the kernel spills (and the pieces' kernels do not) or exceeds the budget and
/// needs more registers than the kernels the pieces would run anyway (the chain so far, of
/// `chain_kind`, and the next op alone). Yes where the backend does not measure.
FusionDecision check_measured_registers(const FusionOptions& opt, const Graph& g, const std::vector<int>& grown,
                                        GroupKind kind, GroupKind chain_kind);

}  // namespace fusert
