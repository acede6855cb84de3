// CPU lowering of attention groups (softmax(Q K^T * scale + mask) V over the heads) from the
// pattern the planner decoded (FusionGroup::attention).
#include <memory>

#include "kernels/cpu/onednn.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

Status lower_attention(const Graph& g, const FusionGroup& grp, CpuKernels kernels, Step& s) {
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
  if (uses_onednn(kernels)) {
    std::string why;
    std::shared_ptr<cpu::onednn::AttentionAnchor> prim(cpu::onednn::AttentionAnchor::create(p, &why));
    if (prim) {
      s.kernel = "onednn_attention";
      s.detail = prim->describe();
      s.run = [=](const BufferTable& b) {
        prim->run(b.f32(q), b.f32(k), b.f32(v), mask == kNoValue ? nullptr : b.f32(mask), b.f32(y));
      };
      return Status();
    }
    s.detail = "reference kernel: " + why;
  }
  s.run = [=](const BufferTable& b) {
    cpu::attention(p, b.f32(q), b.f32(k), b.f32(v), mask == kNoValue ? nullptr : b.f32(mask), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
