// CUDA generator of fused attention: softmax(Q K^T * scale + mask) V per (query row, head,
// batch). See codegen.h.
#include "kernels/cuda/codegen.h"

#include <sstream>

#include "kernels/cuda/codegen_internal.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"

namespace fusert::cuda {

using namespace detail;

// ---------------------------------------------------------------- attention
// Block (i, h, b): the query row goes to shared memory; each warp takes keys j = warp, warp +
// WARPS, ... (lanes split the head's columns, coalesced); then the softmax over the scores in
// shared memory; then y = P V with thread t summing column t % D over keys j = t / D mod G
// (G = BLOCK / D groups), the G partials combined in a fixed order (deterministic).
KernelSource gen_attention(const AttentionSpec& spec) {
  const int64_t d = spec.head_dim > 0 ? spec.head_dim : 1;
  const int warps = kAttnBlock / 32;
  const int64_t groups = d <= kAttnBlock ? kAttnBlock / d : 1;
  const std::string block = std::to_string(kAttnBlock);
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kAttnBlock << ") " << kEntryToken
     << "(const FzAttnArgs a) {\n"
     << "  const int D = " << d << ";\n"
     << "  extern __shared__ float fz_smem[];\n"
     << "  __shared__ float fz_red[32];\n"
     << (d <= kAttnBlock ? "  __shared__ float fz_part[" + std::to_string(groups * d) + "];\n" : "")
     << "  const fz_i64 S = a.seq, i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;\n"
     << "  float* const p = fz_smem;\n  float* const qs = fz_smem + S;\n"
     << "  const float* const q = a.q + (b * S + i) * a.q_stride + a.q_col + h * D;\n"
     << "  for (int c = threadIdx.x; c < D; c += " << block << ") qs[c] = q[c];\n"
     << "  __syncthreads();\n"
     << "  const int lane = threadIdx.x & 31;\n"
     << "  const float* const kb = a.k + b * S * a.k_stride + a.k_col + h * D;\n";
  if (spec.has_mask) os << "  const float* const m = a.mask + b * a.mask_b_stride + i * a.mask_i_stride;\n";
  os << "  for (fz_i64 j = threadIdx.x >> 5; j < S; j += " << warps << ") {\n"
     << "    const float* const kr = kb + j * a.k_stride;\n"
     << "    float dot = 0.0f;\n"
     << "    for (int c = lane; c < D; c += 32) dot += qs[c] * kr[c];\n"
     << "    dot = fz_warp_sum(dot);\n"
     << "    if (lane == 0) p[j] = a.scale * dot" << (spec.has_mask ? " + m[j]" : "") << ";\n  }\n"
     << "  __syncthreads();\n"
     << "  float mx = FZ_NEG_INF;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") mx = fz_nan_max(mx, p[j]);\n"
     << "  mx = fz_block_max<" << kAttnBlock << ">(mx, fz_red);\n"
     << "  const bool empty = mx == FZ_NEG_INF;\n"
     << "  float s = 0.0f;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") {\n"
     << "    const float e = empty ? 0.0f : expf(p[j] - mx);\n    p[j] = e;\n    s += e;\n  }\n"
     << "  s = fz_block_sum<" << kAttnBlock << ">(s, fz_red);\n"
     << "  const float inv = empty ? 0.0f : 1.0f / s;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") p[j] *= inv;\n"
     << "  __syncthreads();\n"
     << "  const float* const vb = a.v + b * S * a.v_stride + a.v_col + h * D;\n"
     << "  float* const y = a.y + (b * S + i) * (a.heads * D) + h * D;\n";
  if (d <= kAttnBlock) {
    os << "  const int G = " << groups << ";\n"
       << "  if (threadIdx.x < G * D) {\n"
       << "    const int c = threadIdx.x % D;\n    float acc = 0.0f;\n"
       << "    for (fz_i64 j = threadIdx.x / D; j < S; j += G) acc += p[j] * vb[j * a.v_stride + c];\n"
       << "    fz_part[threadIdx.x] = acc;\n  }\n"
       << "  __syncthreads();\n"
       << "  if (threadIdx.x < D) {\n    float acc = fz_part[threadIdx.x];\n"
       << "    for (int g = 1; g < G; ++g) acc += fz_part[g * D + threadIdx.x];\n"
       << "    y[threadIdx.x] = acc;\n  }\n";
  } else {
    os << "  for (int c = threadIdx.x; c < D; c += " << block << ") {\n    float acc = 0.0f;\n"
       << "    for (fz_i64 j = 0; j < S; ++j) acc += p[j] * vb[j * a.v_stride + c];\n"
       << "    y[c] = acc;\n  }\n";
  }
  os << "}\n";
  KernelSource ks = finish("attention", os.str(), kAttnBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

size_t attention_shared_bytes(int64_t seq, int64_t head_dim) {
  return static_cast<size_t>((seq > 0 ? seq : 0) + (head_dim > 0 ? head_dim : 1)) * sizeof(float);
}

}  // namespace fusert::cuda
