// CPU lowering of anchor groups onto oneDNN (kernels/cpu/onednn.h): the anchor (Conv, Gemm,
// MatMul) is one primitive created here, at load, with the group's epilogue chain as post-ops
// as far as oneDNN expresses it; the rest of the chain runs after it with our epilogue code.
// The step's detail names the primitive and its post-op chain for --explain.
#include <memory>

#include "kernels/cpu/onednn.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

namespace {

bool is_weight(const Graph& g, ValueId v) { return v != kNoValue && !g.value(v).data.empty(); }

const float* weight_or_null(const Graph& g, ValueId v) { return v == kNoValue ? nullptr : g.value(v).data.f32(); }

}  // namespace

Status lower_anchor_onednn(const Graph& g, const FusionGroup& grp, Step& s) {
  const Node& a = node_at(g, grp.nodes[0]);
  for (ValueId v : a.inputs)
    if (v != kNoValue && g.value(v).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "non-f32 operand";
  const Shape& shape = g.value(a.outputs[0]).shape;
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 1), a.outputs[0], shape, a.op == OpKind::kConv, &t, &why))
    return error(StatusCode::kUnsupported) << why;
  const ValueId y = grp.outputs.empty() ? a.outputs[0] : grp.outputs.at(0);
  const ValueId x = a.inputs[0], w = a.inputs[1], bias = opt_input(a, 2);
  if (!is_weight(g, w) || (bias != kNoValue && !is_weight(g, bias) && a.op != OpKind::kMatMul))
    return error(StatusCode::kUnsupported) << "weights are not initializers";
  s = grp.kind == GroupKind::kSingle ? node_step(g, grp.nodes[0], "") : group_step(g, grp, "");
  if (a.op == OpKind::kConv) {
    auto prim =
        cpu::onednn::ConvAnchor::create(conv_params(g, a), weight_or_null(g, w), weight_or_null(g, bias), t.ep, &why);
    if (!prim) return error(StatusCode::kUnsupported) << why;
    s.kernel = "onednn_conv";
    s.detail = prim->describe();
    std::shared_ptr<const cpu::onednn::ConvAnchor> p(std::move(prim));
    s.run = [=](const BufferTable& b) { p->run(b.f32(x), t.bind(b), b.f32(y)); };
    return Status();
  }
  std::unique_ptr<cpu::onednn::GemmAnchor> prim;
  if (a.op == OpKind::kGemm) {
    prim = cpu::onednn::GemmAnchor::create_gemm(gemm_params(g, a), weight_or_null(g, w), weight_or_null(g, bias), t.ep,
                                                &why);
  } else if (a.op == OpKind::kMatMul) {
    prim = cpu::onednn::GemmAnchor::create_matmul(matmul_params(g, a), is_weight(g, w) ? weight_or_null(g, w) : nullptr,
                                                  t.ep, &why);
  } else {
    return error(StatusCode::kUnsupported) << op_name(a.op) << " is not a oneDNN anchor";
  }
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s.kernel = a.op == OpKind::kGemm ? "onednn_gemm" : "onednn_matmul";
  s.detail = prim->describe();
  std::shared_ptr<const cpu::onednn::GemmAnchor> p(std::move(prim));
  s.run = [=](const BufferTable& b) { p->run(b.f32(x), b.f32(w), t.bind(b), b.f32(y)); };
  return Status();
}

}  // namespace fusert::lowering
