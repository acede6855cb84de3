// The argument structs of the generated (NVRTC) kernels. One definition serves both sides: the
// host includes this header; the code generator pastes the same text, via kernel_abi_source(),
// at the top of every generated translation unit, so host and device layouts cannot drift.
// Every generated kernel takes exactly one argument: one of these structs, by value
// (sm_90 allows 32 KiB of kernel parameters; the largest struct here is about 2.3 KiB).
#pragma once

#define FUSERT_ABI_TEXT                                                                           \
  typedef long long fz_i64;                                                                       \
  enum { FZ_MAX_RANK = 6, FZ_MAX_INPUTS = 8, FZ_MAX_OUTPUTS = 4, FZ_MAX_MEMBERS = 4 };            \
  /* Elementwise program over an output of `rank` dims (shape[] padded with leading 1s to */      \
  /* FZ_MAX_RANK); input i is read at sum_d idx_d * in_strides[i][d] (0 = broadcast). */          \
  struct FzEwArgs {                                                                               \
    fz_i64 numel;                                                                                 \
    fz_i64 shape[FZ_MAX_RANK];                                                                    \
    fz_i64 in_strides[FZ_MAX_INPUTS][FZ_MAX_RANK];                                                \
    const float* in[FZ_MAX_INPUTS];                                                               \
    float* out[FZ_MAX_OUTPUTS];                                                                   \
  };                                                                                              \
  /* Horizontal multi-tensor launch: blockIdx.y selects the member program. */                    \
  struct FzMultiEwArgs {                                                                          \
    FzEwArgs m[FZ_MAX_MEMBERS];                                                                   \
  };                                                                                              \
  /* Row-wise normalisation over an [outer, inner] view, one thread block per row; input i */     \
  /* is read at row * in_strides[i][0] + col * in_strides[i][1]. */                               \
  struct FzRowArgs {                                                                              \
    fz_i64 outer, inner;                                                                          \
    fz_i64 in_strides[FZ_MAX_INPUTS][2];                                                          \
    const float* in[FZ_MAX_INPUTS];                                                               \
    float* out;                                                                                   \
  };                                                                                              \
  /* 2-D pooling of NCHW x [n, c, h, w] -> y [n, c, oh, ow]; the prologue's inputs are */         \
  /* indexed over [n, c, h, w] by in_strides (4 used), the post program's over [n, c, oh, ow]. */ \
  struct FzPoolArgs {                                                                             \
    fz_i64 n, c, h, w, oh, ow;                                                                    \
    fz_i64 in_strides[FZ_MAX_INPUTS][4];                                                          \
    const float* in[FZ_MAX_INPUTS];                                                               \
    float* out;                                                                                   \
  };                                                                                              \
  /* Multi-head attention, token-major Q/K/V rows (see kern::AttentionParams). */                 \
  struct FzAttnArgs {                                                                             \
    fz_i64 batch, heads, seq;                                                                     \
    fz_i64 q_stride, k_stride, v_stride, q_col, k_col, v_col;                                     \
    fz_i64 mask_b_stride, mask_i_stride;                                                          \
    float scale;                                                                                  \
    const float *q, *k, *v, *mask;                                                                \
    float* y;                                                                                     \
  };

FUSERT_ABI_TEXT

#define FUSERT_ABI_STR2(...) #__VA_ARGS__
#define FUSERT_ABI_STR(x) FUSERT_ABI_STR2(x)

namespace fusert::cuda {
/// The ABI text above, pasted into every generated kernel's source.
inline const char* kernel_abi_source() { return FUSERT_ABI_STR(FUSERT_ABI_TEXT); }
}  // namespace fusert::cuda
