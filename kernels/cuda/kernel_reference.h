// Host references of the generated kernels: for every kernel the code generator emits, an
// independent CPU interpreter of its spec that reads the same argument struct (kernel_abi.h)
// and writes the same outputs over the whole launch grid. The CUDA-emulation tests
// (tests/cuda_emu) run the CUDA backend end to end on the CPU by dispatching launches here;
// on a GPU they are the oracle a generated kernel is compared with.
#pragma once

#include <functional>
#include <string>

namespace fusert::cuda {

/// Runs one launch on the CPU: `args` points to the kernel's argument struct; grid as launched.
using KernelReference = std::function<void(const void* args, unsigned grid_x, unsigned grid_y, unsigned grid_z)>;

/// Registers the reference of generated entry `entry` (called by the code generator; equal
/// entries have equal semantics, so a second registration is ignored). Thread-safe.
void register_kernel_reference(const std::string& entry, KernelReference fn);
/// The reference of `entry`, or nullptr.
const KernelReference* find_kernel_reference(const std::string& entry);

}  // namespace fusert::cuda
