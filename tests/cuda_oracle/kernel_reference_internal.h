// Internal: the host reference builders behind kernel_reference.h, one per generator of
// codegen.h. Each returns an interpreter of the spec that reads the generated kernel's argument
// struct exactly as the kernel does (same input indexing, same register file, same stores) and
// covers every element the launch grid covers.
//
// A reference may use only what the generator bakes into the source (program structure and
// constants, rank, access kinds, window parameters, head_dim): equal sources share one entry
// and so one registered reference. Sizes, strides and pointers come from the args at run time.
//
// A spec the generator rejects (its source carries `#error`, so NVRTC never builds it) gives a
// reference that throws std::logic_error with the same message when invoked.
#pragma once

#include <vector>

#include "kernels/cuda/codegen.h"
#include "tests/cuda_oracle/kernel_reference.h"

namespace fusert::cuda::detail {

KernelReference elementwise_reference(const kern::ElementwiseProgram& prog);
KernelReference elementwise_multi_reference(const std::vector<kern::ElementwiseProgram>& progs);
KernelReference row_norm_reference(const RowNormSpec& spec);
KernelReference pool_reference(const PoolSpec& spec);
KernelReference attention_reference(const AttentionSpec& spec);

}  // namespace fusert::cuda::detail
