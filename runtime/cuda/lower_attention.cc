// CUDA lowering of attention groups: one generated kernel per (query row, head, batch) from the
// pattern the planner decoded (FusionGroup::attention).
#include <algorithm>

#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

// softmax(scale * Q K^T + mask) V with the head reshapes/transposes folded into indexing.
Status lower_attention_cuda(GroupLowering& gl) {
  if (!gl.grp.attention) {
    return error(StatusCode::kInternal) << "attention group " << gl.grp.name << " without its decoded pattern";
  }
  const AttentionMatch& m = *gl.grp.attention;  // decoded once, by the planner
  if (attention_shared_bytes(m.seq, m.head_dim) > kMaxDynamicShared)
    return error(StatusCode::kUnsupported) << "sequence too long for shared memory";
  AttentionSpec spec;
  spec.head_dim = m.head_dim;
  spec.has_mask = m.mask != kNoValue;
  KernelSource src = gen_attention(spec);
  FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
  const size_t shared = attention_shared_bytes(m.seq, m.head_dim);
  const int block = src.block;
  const std::string what = gl.grp.name;
  gl.ds.run = [=](const RunEnv& env) {
    FzAttnArgs a;
    std::memset(&a, 0, sizeof a);
    a.batch = m.batch;
    a.heads = m.heads;
    a.seq = m.seq;
    a.q_stride = a.k_stride = a.v_stride = m.heads * m.head_dim;
    a.mask_b_stride = m.mask_b_stride;
    a.mask_i_stride = m.mask_i_stride;
    a.scale = m.scale;
    a.q = env.dev.f32(m.q);
    a.k = env.dev.f32(m.k);
    a.v = env.dev.f32(m.v);
    a.mask = m.mask == kNoValue ? nullptr : env.dev.f32(m.mask);
    a.y = env.dev.f32(m.out);
    dim3 grid(static_cast<unsigned>(m.seq), static_cast<unsigned>(m.heads), static_cast<unsigned>(m.batch));
    return env.ctx.launch(env.kernels[static_cast<size_t>(k)], grid, dim3(block), shared, &a, what);
  };
  return Status();
}

}  // namespace fusert::cuda
