// What each generated kernel computes, as data: the code generator records the spec it built a
// kernel from under the kernel's entry name. The library never interprets it; the host
// references (tests/cuda_oracle, the oracle of the CUDA-emulation and GPU tests) build a CPU
// interpreter from it, so no reference code ships in libfusert.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "kernels/cuda/codegen.h"

namespace fusert::cuda {

/// One generator's input (codegen.h): elementwise program, horizontal multi-program, row norm,
/// pooling, attention.
using KernelSpec =
    std::variant<kern::ElementwiseProgram, std::vector<kern::ElementwiseProgram>, RowNormSpec, PoolSpec, AttentionSpec>;

/// Records the spec of generated entry `entry` (equal entries have equal semantics, so a second
/// registration is ignored). Thread-safe.
void register_kernel_spec(const std::string& entry, KernelSpec spec);
/// The spec of `entry`, or nullptr. The pointer stays valid for the life of the process.
const KernelSpec* find_kernel_spec(const std::string& entry);

}  // namespace fusert::cuda
