// Shared helpers of the oneDNN anchor files (kernels/cpu/onednn/*.cc): the engine, per-thread
// scratch, the post-op translation of epilogue steps, the non-finite checks and the epilogue
// steps run after a primitive. Included by those files only (it includes oneDNN's header).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/onednn.h"

namespace fusert::cpu::onednn::detail {

using dnnl::algorithm;
using dnnl::memory;
using Dims = memory::dims;

const dnnl::engine& cpu_engine();
/// A reusable per-thread buffer of at least `floats` (concurrent runs never share one): slot 0
/// blocked source, 1 blocked destination, 2 aliased output, 3 the primitive's scratchpad, 4 the
/// stacked result of a horizontal GEMM, 5 an NCHW copy of a native residual operand, 6 the
/// intermediate of the 1x1 + depthwise reference fallback, 7 attention scores.
float* scratch(int slot, size_t floats);
Dims dense_strides(const Dims& d);
/// The element strides of `md` when it is a dense permutation of its dims (no inner blocks, no
/// padding: same size as the plain layout, e.g. NHWC); else empty.
Dims dense_strides_of(const memory::desc& md);
/// Constant weights `w` (dense, row-major over `dims`) reordered once into `md`.
memory reordered_weights(const memory::desc& md, const Dims& dims, const float* w);
/// The same for s8 weights (oneDNN adds the zero-point compensation `md` asks for).
memory reordered_weights(const memory::desc& md, const Dims& dims, const int8_t* w);
/// A bias of `m` floats (zeros when `b` is null) in oneDNN memory.
memory bias_memory(const float* b, int64_t m);
/// The layout of a 4-D `md` as the layout pass names it (runtime/execution_plan.h NativeLayout):
/// dense_strides_of, or for one channel block b without padding (nChw8c with C % 8 == 0: the
/// size of NCHW) the outer strides over (N, C/b, H, W) followed by b; else empty.
Dims native_layout_of(const memory::desc& md);

/// The leading epilogue steps as a post-op chain.
struct PostOps {
  dnnl::post_ops ops;
  std::vector<std::string> names;
  struct Binary {
    size_t step;      ///< ep.steps index of its operand
    int index;        ///< position in the post-op chain (DNNL_ARG_ATTR_MULTIPLE_POST_OP)
    memory::desc md;  ///< src1: plain, broadcast dims of 1
  };
  std::vector<Binary> binary;
  size_t fused = 0;
  long sum_step = -1;  ///< the full-shape Add done as a sum post-op: dst holds the operand before the call
};
constexpr long kNoSum = -1;

/// An eltwise post-op (or two) for a unary step, appended to `po` with its name; false when
/// oneDNN has none (the step then runs after the primitive, or the fusion is refused).
bool append_unary(const EpilogueStep& s, dnnl::post_ops* po, std::vector<std::string>* names);
/// True when two eltwise post-ops of `po` use one algorithm with different alpha or beta
/// (oneDNN 2.6's JIT injectors keep one set of constants per algorithm: wrong values).
bool conflicting_eltwise(const dnnl::post_ops& po);
/// The first full-shape Add among the leading `limit` steps: a sum post-op candidate.
long first_full_add(const std::vector<EpilogueStep>& steps, size_t limit);
/// Steps [0, limit) as post-ops over output `out` (per-channel axis `channel_dim`), the Add at
/// `sum_step` as the sum post-op; stops early at a step oneDNN cannot express (fused < limit).
PostOps make_post_ops(const std::vector<EpilogueStep>& steps, const Dims& out, size_t channel_dim, size_t limit,
                      long sum_step = kNoSum);
/// Applies ep.steps from `from` on to y (total elements; conv: channels x spatial) in parallel.
void apply_rest(const Epilogue& ep, size_t from, int64_t total, int64_t channels, int64_t spatial, float* y);
/// The GlobalAveragePool tail of a conv epilogue: y [n, m] = mean over `plane` of `pre`
/// [n, m, plane] (the steps already applied), then ep.post over [n, m] (as conv2d_fused).
void pool_tail(const Epilogue& ep, const float* pre, int64_t n, int64_t m, int64_t plane, float* y);
/// The LayerNorm tail of a GEMM epilogue, in place on rows of `y` [rows, n]: ep.steps from
/// `from` on, LayerNorm (ep.ln_scale, ep.ln_shift, ep.ln_epsilon), ep.post (as gemm_fused).
void layer_norm_tail(const Epilogue& ep, size_t from, int64_t rows, int64_t n, float* y);
/// True when a tensor operand other than the sum post-op's is the output buffer itself.
bool aliases_output(const Epilogue& ep, const float* y, long sum_step);
std::string describe_pd(const char* impl, const PostOps& po, size_t steps, bool reorder_in, bool reorder_out);
/// Whether oneDNN picks NHWC activations for a plain 3x3 convolution on this machine (its AVX-512
/// brgconv kernels do; on AVX2 it picks nChw8c). Asked once, then cached.
bool plain_conv_takes_nhwc();
/// True for oneDNN's reference (unoptimised) implementations, which we never use.
bool is_reference(const char* impl);
/// The first fused step whose post-op does not keep NaN/Inf as our kernels do, or -1.
long first_squash(const std::vector<EpilogueStep>& steps, size_t fused);
bool all_finite(const float* v, int64_t n);
/// True when `x` (n values) and the tensor operands of the steps before `squash` are finite.
bool inputs_finite(const float* x, int64_t n, const Epilogue& ep, long squash, const Dims& out, size_t channel_dim);
/// x in layout `from` -> y in layout `to` (same dims), with a reorder made for this one call:
/// for cold paths only (the NaN/Inf reference fallbacks); hot paths keep theirs.
void reorder_once(const memory::desc& from, const memory::desc& to, const float* x, float* y);
/// True when some output along an axis sees only padding (no tap inside the input).
bool window_in_padding(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t dil, int64_t pad);
/// The primitive's scratchpad for this call (user mode: per thread).
memory scratchpad(const memory::desc& md);
/// Binds the binary post-op operands of `ep` for one execution.
void bind_binary(const PostOps& po, const Epilogue& ep, std::unordered_map<int, memory>* args);

}  // namespace fusert::cpu::onednn::detail
