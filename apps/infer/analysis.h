// infer's fusion analyses: --verify (per-group error) and --ablation (strategy by strategy).
#pragma once

#include "apps/infer/options.h"

namespace fusert::app {

/// Prints each fused group's max error against the unfused path; error if any exceeds the
/// bound (relative L2 1e-4) or NaN/Inf differ.
Status print_verify(Session& s, const TensorMap& inputs);

/// Loads the model once per mode (none, each strategy alone, all) and prints one table.
Status print_ablation(const InferOptions& o, const TensorMap& inputs);
/// --profile: each step's median time over o.runs runs (Session::profile), the slowest steps
/// and the totals per kernel.
Status print_profile(const InferOptions& o, const Session& s, const TensorMap& inputs);

}  // namespace fusert::app
