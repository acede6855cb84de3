// Code generation of fused CUDA kernels for the groups no library call covers (elementwise
// chains, anchor epilogues, horizontal multi-tensor epilogues, LayerNorm/Softmax rows with
// prologue and epilogue, pooling with a fused prologue, attention). Each generator returns a
// complete CUDA C++ translation unit: kernel_abi_source(), device helpers, and one
// `extern "C" __global__` entry taking one struct of kernel_abi.h by value.
// Sources depend only on the program structure (ops, constants, rank, which inputs are
// contiguous/scalar/strided), never on sizes or pointers, so equal structures share one
// compiled kernel. Sizes, strides and pointers arrive in the argument struct. Float constants
// are printed as hex-float literals (exact). Semantics equal the CPU kernels
// (kernels/cpu/fused_kernels.h), which are the oracle.
#pragma once

#include <string>
#include <vector>

#include "kernels/common/epilogue.h"
#include "kernels/common/params.h"

namespace fusert::cuda {

/// One generated kernel: its entry point name and its full source text.
struct KernelSource {
  std::string entry;   ///< "fz_<kind>_<16 hex digits of the structure hash>"
  std::string source;  ///< complete translation unit for NVRTC
  int block = 256;     ///< threads per block the launcher must use (also the __launch_bounds__)
};

/// How the launcher sizes the grid for each generator (documented per function below).

/// Elementwise program (kern::ElementwiseProgram semantics; prog.out_shape rank <= 6, up to 8
/// inputs and 4 outputs). Args: FzEwArgs. Grid: 1-D grid-stride loop over numel, block
/// KernelSource::block; the launcher uses min(ceil(numel / block), 132 * 16) blocks.
/// Specialisation: an input whose strides are the contiguous strides of out_shape is read at
/// the flat index; an all-zero-stride input is read at [0]; others decompose the index.
KernelSource gen_elementwise(const kern::ElementwiseProgram& prog);

/// Horizontal multi-tensor group: up to 4 member programs in one launch; blockIdx.y = member,
/// each member a grid-stride loop over its own FzEwArgs (args.m[member]).
/// Grid: (max over members of the 1-D size above, members).
KernelSource gen_elementwise_multi(const std::vector<kern::ElementwiseProgram>& progs);

/// Row-wise LayerNorm or Softmax with fused prologue and post programs, over [outer, inner].
/// `pre` computes x' per element (register 0 loaded from input 0 unless `pre.loads` says
/// otherwise; the value normalised is register pre.stores[0].first). Then LayerNorm
/// ((x'-mean)/sqrt(var+eps) * in[scale_input][col] + in[shift_input][col], biased variance)
/// or Softmax (max-subtracted; a row of all -inf gives zeros). Then `post` with register 0
/// preset to the normalised value; the result is register post.stores[0].first (or register 0
/// when post.code is empty) written to args.out[row * inner + col]. Input indices of pre and
/// post refer to the same FzRowArgs::in array. Grid: outer blocks of KernelSource::block threads;
/// the row is kept in dynamic shared memory (inner floats): shared_bytes(inner) below.
struct RowNormSpec {
  kern::RowNorm kind = kern::RowNorm::kLayerNorm;
  float eps = 1e-5f;
  int scale_input = -1, shift_input = -1;  ///< LayerNorm: indices into FzRowArgs::in (-1 none)
  kern::ElementwiseProgram pre;            ///< out_shape ignored; input_strides unused (args)
  kern::ElementwiseProgram post;
};
KernelSource gen_row_norm(const RowNormSpec& spec);
size_t row_norm_shared_bytes(int64_t inner);

/// 2-D pooling with a fused prologue: v = pre(x) per input element, then max / average over
/// the window (ONNX MaxPool/AveragePool semantics: pads excluded from max; count_include_pad
/// for average) or the global average over h*w; then `post` on the pooled value (register 0
/// preset) written to y. Args: FzPoolArgs. Grid: 1-D grid-stride over n*c*oh*ow outputs; for
/// global average one warp per (n, c) plane (block 256 = 8 planes per block).
struct PoolSpec {
  enum Kind { kMax, kAverage, kGlobalAverage } kind = kMax;
  int64_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_left = 0;
  int64_t pad_bottom = 0, pad_right = 0;  ///< count_include_pad: the padded extent's far edges
  bool count_include_pad = false;
  kern::ElementwiseProgram pre;   ///< empty code = identity
  kern::ElementwiseProgram post;  ///< empty code = identity
};
KernelSource gen_pool(const PoolSpec& spec);

/// softmax(scale * Q K^T + mask) V per (batch, head, query row), as cpu::attention.
/// Args: FzAttnArgs. Grid: (seq, heads, batch), block KernelSource::block; dynamic shared
/// memory attention_shared_bytes(seq, head_dim). head_dim is baked into the source.
struct AttentionSpec {
  int64_t head_dim = 64;
  bool has_mask = false;
};
KernelSource gen_attention(const AttentionSpec& spec);
size_t attention_shared_bytes(int64_t seq, int64_t head_dim);

}  // namespace fusert::cuda
