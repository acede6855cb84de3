// Internal interface between the CUDA lowering files: the per-kind lowering functions and the
// helpers they share (device constants, row-program strides in row_programs.cc, the anchor
// remainder).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/cudnn_conv.h"
#include "runtime/cuda/cuda_programs.h"

namespace fusert::cuda {

/// Lowering context of one group: the graph, the kernel table, the step being built.
struct GroupLowering {
  const Graph& g;
  const FusionGroup& grp;
  KernelTable& table;
  DeviceStep& ds;
  int max_registers = 0, max_spill = 0;
  /// Compiles `src` and records it on the step; returns the kernel index.
  Result<int> kernel(const KernelSource& src);
};

/// Member programs of a horizontal group run as multi-tensor kernels, FZ_MAX_MEMBERS members per
/// launch (blockIdx.y = member).
struct MultiLaunch {
  std::vector<std::shared_ptr<BoundProgram>> progs;
  std::vector<int> kernels, blocks;  ///< one per launch
  /// Generates and compiles the kernels of `progs` for the group being lowered.
  Status build(GroupLowering& gl);
  /// Enqueues every launch.
  Status run(const RunEnv& env, const std::string& what) const;
};

/// Row strides [row, col] of value `v` broadcast to `shape` viewed as [outer, inner = last dim];
/// false when the operand is not full, per-column, per-row or scalar.
bool row_strides(const Shape& v, const Shape& shape, std::vector<int64_t>* strides);

/// Adds value `v` (or finds it) as a row-program input with [row, col] strides over `shape`;
/// false if it is not row-indexable.
bool add_row_input(const Graph& g, BoundProgram& bp, ValueId v, const Shape& shape, int* index);
/// Appends epilogue steps to a row program, their operands as row inputs; false if one is not
/// row-indexable.
bool append_row_steps(const Graph& g, BoundProgram& bp, const std::vector<kern::EpilogueStep>& steps,
                      const std::vector<ValueId>& operands, const Shape& shape, kern::ElementwiseProgram* prog);

/// FzRowArgs for a row program whose inputs are `bp.inputs` with 2-D strides in
/// bp.prog.input_strides.
FzRowArgs row_args(const BoundProgram& bp, int64_t outer, int64_t inner, const RunEnv& env, float* out);

using lowering::node_at;
using lowering::opt_input;
using lowering::tail_of;

/// True when a Conv/Gemm's weight (input 1) and bias (input 2, if any) are initializers.
inline bool weights_present(const Graph& g, const Node& n) {
  if (g.value(n.inputs[1]).data.empty()) return false;
  return n.inputs.size() < 3 || n.inputs[2] == kNoValue || !g.value(n.inputs[2]).data.empty();
}

// The library half of an anchor group, built at prepare time.
struct AnchorState {
  std::unique_ptr<CudnnConv> conv, conv2;
  std::unique_ptr<LtGemm> gemm;
  ConstPtr bias;  ///< summed or beta-scaled bias, when the graph's own cannot be used
};

// The generated remainder of an anchor epilogue, reading the anchor's result from scratch.
struct Remainder {
  enum Kind { kNone, kElementwise, kPool, kRowNorm } kind = kNone;
  int kernel = -1;
  int block = 256;
  std::shared_ptr<BoundProgram> bp;  ///< program (elementwise), or pre/post inputs (pool, row)
  int64_t outer = 0, inner = 0;      ///< row norm
  kern::ConvParams p;                ///< pool: the conv output dims
  size_t shared = 0;
};

/// Builds the generated part of an anchor group for the epilogue steps of `t` from `from` on
/// (and the tail), reading the anchor's result from scratch offset 0 with logical shape
/// `shape` (remainder.cc; used by the anchor and conv-sum lowerings).
Status build_remainder(GroupLowering& gl, const lowering::EpilogueTemplate& t, size_t from, const Shape& shape,
                       const kern::ConvParams* conv, Remainder* r);
/// Enqueues the remainder `r` writing `y`.
Status run_remainder(const RunEnv& env, const Remainder& r, ValueId y, const std::string& what);

// Per-kind lowerings, one file per group kind as in runtime/cpu (lower_single.cc,
// lower_anchor.cc, lower_elementwise.cc, lower_horizontal.cc, lower_grouped.cc, lower_cross.cc,
// lower_attention.cc). Each fills gl.ds (prepare/run/kernels) or returns kUnsupported with the
// reason (the capability check reports it; the planner then does not form the group).
Status lower_elementwise_cuda(GroupLowering& gl);
Status lower_row_norm_cuda(GroupLowering& gl);
Status lower_attention_cuda(GroupLowering& gl);
Status lower_single_cuda(GroupLowering& gl);
/// Slice, Split, Expand, Tile and constant Pad as strided copies (lower_copy.cc).
Status lower_slice_cuda(GroupLowering& gl, const Node& n);
Status lower_pad_cuda(GroupLowering& gl, const Node& n);
Status lower_tile_cuda(GroupLowering& gl, const Node& n);
/// Resize of the last two dims on the device (cuda::resize_2d; lower_copy.cc).
Status lower_resize_cuda(GroupLowering& gl, const Node& n);
/// ConvTranspose on cuDNN's backward-data convolution (lower_conv_transpose.cc).
Status lower_conv_transpose_cuda(GroupLowering& gl, const Node& n);
/// The reductions (ReduceSum/Mean on cuBLASLt, the others on kernels/cuda/reduce.cuh; lower_reduce.cc).
Status lower_reduce_cuda(GroupLowering& gl, const Node& n);
/// ArgMax / ArgMin (kernels/cuda/reduce.cuh; lower_reduce.cc).
Status lower_arg_extreme_cuda(GroupLowering& gl, const Node& n);
/// LRN across channels (kernels/cuda/reduce.cuh; lower_reduce.cc).
Status lower_lrn_cuda(GroupLowering& gl, const Node& n);
/// CumSum along a constant axis (kernels/cuda/reduce.cuh; lower_reduce.cc).
Status lower_cumsum_cuda(GroupLowering& gl, const Node& n);
/// Comparisons, And/Or/Xor/Not (kernels/cuda/logic.cuh) and Where (lower_logic.cc).
Status lower_logic_cuda(GroupLowering& gl, const Node& n);
Status lower_where_cuda(GroupLowering& gl, const Node& n);
/// Max, Min, Sum, Mean of f32 inputs and PRelu (kernels/cuda/nary.cuh; lower_logic.cc).
Status lower_nary_cuda(GroupLowering& gl, const Node& n);
Status lower_split_cuda(GroupLowering& gl, const Node& n);
Status lower_expand_cuda(GroupLowering& gl, const Node& n);
Status lower_anchor_cuda(GroupLowering& gl);
Status lower_conv_sum_cuda(GroupLowering& gl);
Status lower_horizontal_cuda(GroupLowering& gl);
Status lower_branch_merge_cuda(GroupLowering& gl);
Status lower_horizontal_conv_cuda(GroupLowering& gl);
Status lower_grouped_cuda(GroupLowering& gl);

}  // namespace fusert::cuda
