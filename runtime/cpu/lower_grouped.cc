// CPU lowering of grouped groups: same-shape Gemms or LayerNorms on different inputs, one
// launch.
#include <array>
#include <memory>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

Status lower_grouped(const Graph& g, const FusionGroup& grp, Step& s) {
  auto chains = member_chains(g, grp);
  const Node& first = node_at(g, chains[0][0]);
  if (first.op == OpKind::kLayerNormalization) {
    s = group_step(g, grp, "norm_rows_grouped");
    std::vector<int> members(grp.nodes);
    std::vector<std::array<ValueId, 4>> io;
    const Shape& shape = g.value(first.inputs[0]).shape;
    int64_t inner = shape.back(), outer = shape_numel(shape) / inner;
    float eps = static_cast<float>(first.attr_f("epsilon"));
    for (int ni : members) {
      const Node& n = node_at(g, ni);
      io.push_back({n.inputs[0], n.inputs[1], n.inputs.size() > 2 ? n.inputs[2] : kNoValue, n.outputs[0]});
    }
    s.run = [=](const BufferTable& b) {
      for (const auto& r : io) {
        cpu::norm_rows_fused(outer, inner, b.f32(r[0]), {}, cpu::RowNorm::kLayerNorm, b.f32(r[1]),
                             r[2] == kNoValue ? nullptr : b.f32(r[2]), eps, {}, b.f32(r[3]));
      }
    };
    return Status();
  }
  s = group_step(g, grp, "gemm_grouped");
  const int64_t m = g.value(first.outputs[0]).shape[0], n = g.value(first.outputs[0]).shape[1],
                k = g.value(first.inputs[0]).shape[1];
  std::vector<FloatBuf> ws, bs;
  std::vector<ValueId> as, ys;
  std::vector<EpilogueTemplate> eps;
  for (const auto& chain : chains) {
    const Node& nd = node_at(g, chain[0]);
    if (chain.size() != 1)
      return error(StatusCode::kInternal) << "grouped GEMM member '" << nd.name << "' has an epilogue chain";
    FUSERT_RETURN_IF_ERROR(check_const(g, nd, 1));
    FUSERT_RETURN_IF_ERROR(check_const(g, nd, 2));
    ws.push_back(std::make_shared<std::vector<float>>(weight_nk(g, nd)));
    bs.push_back(std::make_shared<std::vector<float>>(bias_n(g, nd, n)));
    EpilogueTemplate t;
    t.ep.out_shape = {m, n};
    if (!per_column_bias(g, nd)) bias_as_epilogue(g, nd, {m, n}, &t);
    eps.push_back(t);
    as.push_back(nd.inputs[0]);
    ys.push_back(nd.outputs[0]);
  }
  s.run = [=](const BufferTable& b) {
    std::vector<cpu::GroupedGemmMember> members(ys.size());
    for (size_t i = 0; i < ys.size(); ++i) {
      members[i].a = b.f32(as[i]);
      members[i].w = ws[i]->data();
      members[i].bias = bs[i]->data();
      members[i].ep = eps[i].bind(b);
      members[i].y = b.f32(ys[i]);
    }
    cpu::gemm_grouped(m, n, k, members);
  };
  return Status();
}

}  // namespace fusert::lowering
