// CPU lowering of attention groups (softmax(Q K^T * scale + mask) V over the heads) from the
// pattern the planner decoded (FusionGroup::attention).
#include <memory>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

Status lower_attention(const Graph& g, const FusionGroup& grp, Step& s) {
  if (!grp.attention)
    return error(StatusCode::kInternal) << "attention group " << grp.name << " without its decoded pattern";
  const AttentionMatch& m = *grp.attention;  // decoded once, by the planner
  s = group_step(g, grp, "attention");
  cpu::AttentionParams p;
  p.batch = m.batch;
  p.heads = m.heads;
  p.seq = m.seq;
  p.head_dim = m.head_dim;
  p.q_stride = p.k_stride = p.v_stride = m.heads * m.head_dim;
  p.scale = m.scale;
  p.mask_b_stride = m.mask_b_stride;
  p.mask_i_stride = m.mask_i_stride;
  ValueId q = m.q, k = m.k, v = m.v, mask = m.mask, y = m.out;
  s.run = [=](const BufferTable& b) {
    cpu::attention(p, b.f32(q), b.f32(k), b.f32(v), mask == kNoValue ? nullptr : b.f32(mask), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
