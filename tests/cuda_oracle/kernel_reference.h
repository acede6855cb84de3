// Host references of the generated kernels (the oracle; tests only, not in libfusert): for every kernel the code
// generator emits, an independent CPU interpreter of its spec that reads the same argument struct (kernel_abi.h) and
// writes the same outputs over the whole launch grid. The CUDA-emulation tests (tests/cuda_emu) run the CUDA backend
// end to end on the CPU by dispatching launches here; on a GPU they are the oracle a generated kernel is compared with.
#pragma once

#include <functional>
#include <string>

namespace fusert::cuda {

/// Runs one launch on the CPU: `args` points to the kernel's argument struct; grid as launched.
using KernelReference = std::function<void(const void* args, unsigned grid_x, unsigned grid_y, unsigned grid_z)>;

/// The reference of generated entry `entry`, built from the spec the code generator recorded
/// (kernels/cuda/kernel_spec.h), or nullptr when no kernel of that entry was generated in this
/// process. Thread-safe.
const KernelReference* find_kernel_reference(const std::string& entry);

}  // namespace fusert::cuda
