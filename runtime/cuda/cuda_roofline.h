// The CUDA backend's machine for the planner (its registry entry's Roofline): an H200, 60 TFLOP/s
// fp32 and 4300 GB/s of measured copy bandwidth, and a kernel launch of about 5 us (CUDA Graphs
// lower it). No CUDA header: a build without the CUDA backend can still plan for it
// (SessionOptions::plan_for "cuda", the planner fuzzer's "all (cuda plan)" mode).
#pragma once

#include "graph/fusion/group.h"

namespace fusert::cuda {

constexpr Roofline kCudaRoofline{60e12, 4300e9, 5.0};

}  // namespace fusert::cuda
