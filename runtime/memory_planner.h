// Liveness-based arena planning: activations whose lifetimes do not overlap share memory.
#pragma once

#include "runtime/execution_plan.h"

namespace fusert {

/// Computes every activation's liveness over `plan.steps` (graph inputs live from step 0, graph
/// outputs to the last step) and places it in one arena with greedy-by-size best fit (as in
/// TFLite's arena planner), 64-byte aligned. Fills plan.slots, arena_bytes,
/// naive_activation_bytes and intermediate_bytes (each value passed between steps counts its
/// bytes once for the write plus once per reading step). A step's output takes the buffer of
/// its Step::in_place_of input where that input dies there (read by no later step, not a graph
/// input or output, the same size, read by the step in no other role).
void plan_memory(const Graph& g, ExecutionPlan& plan);

}  // namespace fusert
