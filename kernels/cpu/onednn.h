// oneDNN anchors for the CPU backend: convolution (grouped, depthwise, dilated, asymmetric pads)
// and GEMM / batched MatMul as oneDNN primitives, created once at load with the group's leading
// epilogue steps as post-ops (eltwise: Relu, Clip, Sigmoid, Tanh, HardSwish, HardSigmoid as
// linear + clip, GELU erf/tanh, Exp, Abs, Sqrt, Neg; binary: Add/Sub/Mul/Div of a
// full-shape, per-channel or scalar operand; sum: a residual Add whose buffer is the output).
// Steps oneDNN cannot express run after the primitive with our epilogue code (the same
// formulas as the reference kernels). Constant weights are reordered once into the format the
// primitive prefers; activations stay plain (NCHW, row-major) at the kernel boundary and are
// reordered to and from a blocked format inside the call when the primitive prefers one.
// ISA dispatch (AVX2, AVX-512, AMX) is oneDNN's, at run time, on the machine it runs on.
// Reference: oneDNN v2.6 developer guide, "Primitive Attributes: Post-ops" and "Convolution".
// Kernels see buffers and parameter structs only, never the graph.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/quantize.h"

namespace fusert::cpu::onednn {

/// True when this build links oneDNN.
bool built();

/// The arithmetic of the float anchors (Conv, Gemm, MatMul by constant weights). kBf16: the
/// source activation is rounded to bfloat16 when it enters the primitive (a reorder per call),
/// the weights once at creation (round to nearest even); products are accumulated in f32 and the
/// output, post-ops and epilogue stay f32, as are the tensors between steps (`--precision bf16`).
/// An anchor oneDNN cannot run optimised in bf16 runs in f32 and says so in describe().
enum class Precision { kF32, kBf16 };
/// True when oneDNN runs bf16 natively on this CPU (AVX512_BF16 or AMX, as its ISA dispatch sees
/// it: ONEDNN_MAX_CPU_ISA lowers it); false in a build without oneDNN.
bool bf16_native();

/// A oneDNN primitive with post-ops and the epilogue steps it leaves to us. Thread-safe: run()
/// may be called concurrently (oneDNN primitives are stateless; scratch is per thread).
class Anchor {
 public:
  virtual ~Anchor() = default;
  /// Number of leading ep.steps that run inside the primitive as post-ops.
  virtual size_t fused_steps() const = 0;
  /// What was created, e.g. "brgconv:avx512_core, post-ops: sum, eltwise_relu; 1 step after".
  virtual std::string describe() const = 0;
};

/// y [N, M, OH, OW] = ep(conv(x [N, C, H, W], w) + bias), ONNX Conv semantics (ConvParams).
/// `w` [M, C/group, KH, KW] and `bias` [M] (nullable) are read at creation only.
class ConvAnchor : public Anchor {
 public:
  /// `ep` gives the steps and operand modes (operands unbound); a GlobalAveragePool tail (and
  /// ep.post after it) runs after the primitive, as in conv2d_fused. Returns nullptr with
  /// `why` when oneDNN would run it only with its reference implementation or cannot create it.
  static std::unique_ptr<ConvAnchor> create(const ConvParams& p, const float* w, const float* bias, const Epilogue& ep,
                                            std::string* why, Precision prec = Precision::kF32);
  /// `ep` carries the bound operands (same steps as at creation). y may alias a tensor
  /// operand (a residual whose buffer is reused); it must not alias x.
  virtual void run(const float* x, const Epilogue& ep, float* y) const = 0;

  /// Native layouts: the layout of the same size as NCHW in which the primitive prefers its
  /// input / output, as runtime/execution_plan.h NativeLayout names it (the element strides
  /// over N, C, H, W of a dense layout such as NHWC; or over N, C/b, H, W followed by b for
  /// oneDNN's unpadded nChw8c / nChw16c), or empty when it prefers NCHW or a padded layout. The output is offered only
  /// when the whole epilogue runs inside the primitive (post-ops, the sum post-op, no tail). The sum operand (the
  /// residual the sum post-op adds, index sum_step() of ep.steps) is accepted in the output's native layout when the
  /// output is offered; it is then copied into the destination as it is instead of reordered.
  virtual std::vector<int64_t> native_input() const = 0;
  virtual std::vector<int64_t> native_output() const = 0;
  virtual std::vector<int64_t> native_sum_operand() const = 0;
  /// The epilogue step done as oneDNN's sum post-op, or -1.
  virtual long sum_step() const = 0;
  /// Reads x / writes y / reads the sum operand in the native layout instead of NCHW (no
  /// reorder). Set once, before any run, by a layout pass that checked every other reader and
  /// writer of each buffer.
  virtual void use_native(bool input, bool output, bool sum_operand) = 0;
};

/// Block fusion of an inverted-residual pair: a 1x1 convolution and the depthwise convolution
/// that consumes it, as one oneDNN primitive whose depthwise convolution is the `dw` post-op of
/// the 1x1 one (oneDNN v2.6 developer guide, "Primitive Attributes: Post-ops", depthwise
/// post-op, and "Depthwise Fusion"). The [N, M, H, W] intermediate is never written in full:
/// oneDNN's single-pass kernel computes the 1x1 rows a band of depthwise output rows needs.
///   mid [N, M, H, W]   = ep1(conv1x1(x [N, C, H, W], w1 [M, C, 1, 1]) + b1)
///   y   [N, M, OH, OW] = ep2(depthwise(mid, w2 [M, 1, K, K]) + b2)
/// Both epilogues are unary steps only (eltwise post-ops: Relu, Clip, HardSwish, ...). The
/// depthwise conv: square kernel K, one stride s on both axes, dilation 1, top/left pads equal
/// (oneDNN's padding_l) and OH = ceil(H / s), OW = ceil(W / s) (oneDNN derives the right pads so).
/// Activations are NCHW at the boundary (reordered to and from the primitive's layout inside)
/// unless use_native keeps them in it. Where oneDNN's convolutions take NHWC (AVX-512) the pair
/// runs in NHWC on the two-pass kernel only (the single-pass one computes wrong values there),
/// once per image when a batch's intermediate passes 4 MB; elsewhere oneDNN picks.
/// Refused (nullptr with `why`): any other shape, a non-unary or tail step, non-finite weights, a
/// reference implementation, and, unless `allow_two_pass`, oneDNN's ref_fused_convolution (its
/// two optimised convolutions one after the other through a whole scratch intermediate: one
/// call, not a single-pass kernel). A call whose input holds NaN/Inf
/// runs the two reference convolutions (as ConvAnchor). Weights are read at creation only.
class PointwiseDepthwiseAnchor : public Anchor {
 public:
  static std::unique_ptr<PointwiseDepthwiseAnchor> create(const ConvParams& p1, const float* w1, const float* b1,
                                                          const Epilogue& ep1, const ConvParams& p2, const float* w2,
                                                          const float* b2, const Epilogue& ep2, bool allow_two_pass,
                                                          std::string* why);
  virtual void run(const float* x, float* y) const = 0;
  /// Native layouts (as ConvAnchor's): x / y in the primitive's own layout of the size of NCHW
  /// (dense, or channel-blocked without padding), or empty.
  virtual std::vector<int64_t> native_input() const = 0;
  virtual std::vector<int64_t> native_output() const = 0;
  virtual void use_native(bool input, bool output) = 0;
};

/// MaxPool / AveragePool (ONNX semantics as cpu::max_pool2d / avg_pool2d; NCHW [n, c, h, w] ->
/// [n, c, oh, ow]) on oneDNN's pooling primitive (pooling_max, pooling_avg_include_padding /
/// pooling_avg_exclude_padding), in NCHW or, when the layout pass keeps its buffers native, in
/// the layout oneDNN's convolutions pick on this machine (NHWC with AVX-512, nChw8c with AVX2);
/// an NCHW call goes through that layout too when oneDNN pools NCHW with a generic loop only.
/// Refused (nullptr with `why`; the reference kernel runs): dilation, a window with no real
/// input, and an AveragePool whose ceil_mode window reaches past the padding with
/// count_include_pad (oneDNN divides by the whole window). A call whose input holds NaN/Inf runs
/// the reference kernel (oneDNN's max does not propagate NaN as ONNX does).
/// QLinearConv as one oneDNN int8 convolution (kernels/cpu/onednn/qconv.cc): x (u8 or s8, NCHW)
/// with its zero point, s8 weights [M, C/group, KH, KW] (zero point 0), the int32 bias, the
/// requantisation multipliers as output scales, the activation as an eltwise clip, y (u8 or s8,
/// NCHW) with its zero point: the same arithmetic as cpu::qlinear_conv (kernels/cpu/quantize.h).
/// Thread-safe like the others.
class QConvAnchor {
 public:
  virtual ~QConvAnchor() = default;
  /// nullptr with `why` when oneDNN has no optimised int8 convolution for it.
  static std::unique_ptr<QConvAnchor> create(const ConvParams& p, DType xt, int32_t x_zero_point, const int8_t* w,
                                             const Requant& r, std::string* why);
  virtual void run(const void* x, void* y) const = 0;
  virtual std::string describe() const = 0;
  /// Native layouts (as ConvAnchor's, element strides over N, C, H, W): x in the primitive's
  /// dense source layout (NHWC where oneDNN's int8 kernels take it), y in NHWC (our requantisation
  /// writes either); empty when the primitive reads NCHW or a blocked layout.
  virtual std::vector<int64_t> native_input() const = 0;
  virtual std::vector<int64_t> native_output() const = 0;
  virtual void use_native(bool input, bool output) = 0;
};

/// MatMulInteger by constant s8 weights as one oneDNN int8 matmul (kernels/cpu/onednn/qmatmul.cc):
/// y [m, n] (s32) = (a [m, k] (u8 or s8) - a_zero_point) @ b [k, n], exact; the zero point given per
/// run (DynamicQuantizeLinear computes it).
class IntMatMulAnchor {
 public:
  virtual ~IntMatMulAnchor() = default;
  static std::unique_ptr<IntMatMulAnchor> create(int64_t m, int64_t k, int64_t n, DType at, const int8_t* b,
                                                 std::string* why);
  virtual void run(const void* a, int32_t a_zero_point, int32_t* y) const = 0;
  virtual std::string describe() const = 0;
};

class PoolAnchor {
 public:
  virtual ~PoolAnchor() = default;
  static std::unique_ptr<PoolAnchor> create(const PoolParams& p, bool max, std::string* why);
  virtual void run(const float* x, float* y) const = 0;
  virtual std::string describe() const = 0;
  /// The native layout of x / y (the layout pass's offer), as ConvAnchor's.
  virtual std::vector<int64_t> native_input() const = 0;
  virtual std::vector<int64_t> native_output() const = 0;
  virtual void use_native(bool input, bool output) = 0;
};

/// Multi-head attention with cpu::attention's contract (AttentionParams): per image and block of
/// up to 64 queries, scores [H, rows, S] = Q K^T as one oneDNN matmul batched over the heads
/// (Q, K read in place as strided per-head views of the token-major rows), then scale, mask and
/// the row softmax in place (cpu::attention's code), then y = P V as a second batched matmul
/// writing each head's columns of y. Scores stay in a per-thread buffer (H x 64 x S floats).
/// Refused (nullptr with `why`) where oneDNN has only a reference matmul for these shapes.
class AttentionAnchor {
 public:
  virtual ~AttentionAnchor() = default;
  static std::unique_ptr<AttentionAnchor> create(const AttentionParams& p, std::string* why);
  virtual void run(const float* q, const float* k, const float* v, const float* mask, float* y) const = 0;
  virtual std::string describe() const = 0;
};

/// Gemm (ONNX): y [M, N] = ep(alpha * op(A) * op(B) + beta * C) with B constant and C absent
/// or a constant per-column vector ([N], [1, N], [1]). `b` and `c` are read at creation only.
/// MatMul: y [batch, M, N] = ep(A[b] * B[b']) for batch indices that are the identity or all
/// zero (B shared); `b_const` non-null makes B a constant reordered once. A LayerNorm tail (and
/// ep.post) runs after the primitive, row by row, as in gemm_fused / matmul_fused.
class GemmAnchor : public Anchor {
 public:
  static std::unique_ptr<GemmAnchor> create_gemm(const GemmParams& p, const float* b, const float* c,
                                                 const Epilogue& ep, std::string* why,
                                                 Precision prec = Precision::kF32);
  /// `bias` (N floats, with a constant B whose batches fold into one [batch * M, K] x [K, N]
  /// GEMM; else refused): the per-column Add before `ep`, given to oneDNN as the matmul's bias
  /// instead of a binary post-op (ConvNeXt's and ViT's Linear layers exported as MatMul + Add).
  /// `prec` kBf16 applies with a constant B only.
  static std::unique_ptr<GemmAnchor> create_matmul(const MatMulParams& p, const float* b_const, const float* bias,
                                                   const Epilogue& ep, std::string* why,
                                                   Precision prec = Precision::kF32);
  /// `b` is ignored when B is constant. y may alias a tensor operand, not a or b.
  virtual void run(const float* a, const float* b, const Epilogue& ep, float* y) const = 0;
};

/// Horizontal group of Gemms sharing one input: one oneDNN GEMM of A [M, K] with the
/// concatenated weights w_cat [sum n_i, K] (Linear layout) and biases b_cat [sum n_i] into a
/// per-thread scratch, then each member's columns through its own epilogue (steps, LayerNorm,
/// post) into its output, as gemm_horizontal does.
class HorizontalAnchor : public Anchor {
 public:
  static std::unique_ptr<HorizontalAnchor> create(int64_t m, int64_t k, const std::vector<int64_t>& widths,
                                                  const float* w_cat, const float* b_cat, std::string* why,
                                                  Precision prec = Precision::kF32);
  virtual void run(const float* a, std::vector<HorizontalMember>& members) const = 0;
};

}  // namespace fusert::cpu::onednn
