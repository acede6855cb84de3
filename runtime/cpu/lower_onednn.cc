// CPU lowering of anchor groups onto oneDNN (kernels/cpu/onednn.h): the anchor (Conv, Gemm,
// MatMul) is one primitive created here, at load, with the group's epilogue chain as post-ops
// as far as oneDNN expresses it; the rest of the chain runs after it with our epilogue code.
// The step's detail names the primitive and its post-op chain for --explain.
#include <memory>

#include "kernels/cpu/onednn.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

namespace {

using cpu::onednn::Precision;

bool is_weight(const Graph& g, ValueId v) { return v != kNoValue && !g.value(v).data.empty(); }

const float* weight_or_null(const Graph& g, ValueId v) { return v == kNoValue ? nullptr : g.value(v).data.f32(); }

// How many times the epilogue reads `v` as an operand.
int operand_uses(const EpilogueTemplate& t, ValueId v) {
  int n = (t.ln_scale == v) + (t.ln_shift == v);
  for (ValueId o : t.step_operands) n += o == v;
  for (ValueId o : t.post_operands) n += o == v;
  return n;
}

// Offers `v` to the layout pass as a buffer the step can read in `strides`; its place in
// n->reads, or -1 when there is no layout to offer.
int offer_read(NativeLayout* n, ValueId v, std::vector<int64_t> strides) {
  if (strides.empty()) return -1;
  n->reads.push_back({v, std::move(strides), false});
  return static_cast<int>(n->reads.size()) - 1;
}

// What the layout pass may change for a convolution step: its source when the group reads x
// only as the convolution's source (not also as an epilogue operand), its output, and the
// residual operand of the sum post-op when the epilogue reads it nowhere else.
std::shared_ptr<NativeLayout> native_layout(const std::shared_ptr<cpu::onednn::ConvAnchor>& p, ValueId x, ValueId y,
                                            const EpilogueTemplate& t) {
  auto n = std::make_shared<NativeLayout>();
  n->output = y;
  n->output_strides = p->native_output();
  const int src = operand_uses(t, x) == 0 ? offer_read(n.get(), x, p->native_input()) : -1;
  int res = -1;
  const long sum = p->sum_step();
  if (sum >= 0 && static_cast<size_t>(sum) < t.step_operands.size()) {
    const ValueId r = t.step_operands[static_cast<size_t>(sum)];
    if (r != kNoValue && r != x && operand_uses(t, r) == 1) res = offer_read(n.get(), r, p->native_sum_operand());
  }
  n->apply = [p, src, res](const NativeLayout& l) {
    p->use_native(src >= 0 && l.reads[static_cast<size_t>(src)].used, l.output_used,
                  res >= 0 && l.reads[static_cast<size_t>(res)].used);
  };
  return n;
}

// Conv-sum layouts. Inside the step, conv2 hands y to conv1's sum post-op: when conv2 can write
// the layout in which conv1 adds its residual, it does so always (one reorder pair less), and
// conv1 writes y in that layout only if the layout pass keeps y native. Outside, the sources x1
// and x2 may each be native (when the epilogue reads neither as an operand).
std::shared_ptr<NativeLayout> native_conv_sum(const std::shared_ptr<cpu::onednn::ConvAnchor>& first,
                                              const std::shared_ptr<cpu::onednn::ConvAnchor>& second, ValueId x1,
                                              ValueId x2, ValueId y, const EpilogueTemplate& t) {
  const bool inner = !second->native_output().empty() && second->native_output() == first->native_sum_operand();
  auto n = std::make_shared<NativeLayout>();
  n->output = y;
  if (inner) n->output_strides = first->native_output();
  const bool apart = x1 != x2;
  const int s1 = apart && operand_uses(t, x1) == 0 ? offer_read(n.get(), x1, first->native_input()) : -1;
  const int s2 = apart && operand_uses(t, x2) == 0 ? offer_read(n.get(), x2, second->native_input()) : -1;
  auto used = [](const NativeLayout& l, int i) { return i >= 0 && l.reads[static_cast<size_t>(i)].used; };
  n->apply = [=](const NativeLayout& l) {
    second->use_native(used(l, s2), inner, false);
    first->use_native(used(l, s1), inner && l.output_used, inner);
  };
  // Without the layout pass (reference kernels never get here; tests may skip the pass): the
  // inner hand-over alone.
  if (inner) n->apply(*n);
  return n;
}

// Conv-sum (cross): y = chain(conv1(x1) + conv2(x2) + b1 + b2). conv2 writes y first; conv1 then
// adds into it with the sum post-op (its epilogue starts with "+ y"), bias b1 + b2, and the
// chain as post-ops.
Status lower_conv_sum_onednn(const Graph& g, const FusionGroup& grp, Precision prec, Step& s) {
  const Node& c1 = node_at(g, grp.nodes[0]);
  const Node& c2 = node_at(g, grp.nodes[1]);
  const Node& join = node_at(g, grp.nodes[2]);
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || join.op != OpKind::kAdd)
    return error(StatusCode::kInternal) << "conv-sum group shape";
  for (const Node* c : {&c1, &c2}) {
    if (!is_weight(g, c->inputs[1]) || (opt_input(*c, 2) != kNoValue && !is_weight(g, opt_input(*c, 2))))
      return error(StatusCode::kUnsupported) << "weights are not initializers";
  }
  const Shape& shape = g.value(join.outputs[0]).shape;
  const ValueId y = grp.outputs.at(0);
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 3), join.outputs[0], shape, true, &t, &why))
    return error(StatusCode::kUnsupported) << why;
  // conv2 writes its full result into y: with a GlobalAveragePool tail y is only [N, M] (the
  // planner fuzzer caught the overflow).
  if (t.ep.tail != cpu::EpTail::kNone) return error(StatusCode::kUnsupported) << "conv-sum with a pooling tail";
  cpu::EpilogueStep add;  // "+ y": what conv2 left there
  add.op = cpu::EpOp::kAddTensor;
  add.mode = cpu::OperandMode::kFull;
  t.ep.steps.insert(t.ep.steps.begin(), add);
  t.step_operands.insert(t.step_operands.begin(), y);
  const cpu::ConvParams p1 = conv_params(g, c1), p2 = conv_params(g, c2);
  auto bias = std::make_shared<std::vector<float>>(static_cast<size_t>(p1.m), 0.f);
  for (const Node* c : {&c1, &c2}) {
    if (const float* b = weight_or_null(g, opt_input(*c, 2)))
      for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] += b[i];
  }
  cpu::Epilogue plain;
  plain.out_shape = t.ep.out_shape;
  std::shared_ptr<cpu::onednn::ConvAnchor> second =
      cpu::onednn::ConvAnchor::create(p2, weight_or_null(g, c2.inputs[1]), nullptr, plain, &why, prec);
  if (!second) return error(StatusCode::kUnsupported) << why;
  std::shared_ptr<cpu::onednn::ConvAnchor> first =
      cpu::onednn::ConvAnchor::create(p1, weight_or_null(g, c1.inputs[1]), bias->data(), t.ep, &why, prec);
  if (!first) return error(StatusCode::kUnsupported) << why;
  s = group_step(g, grp, "onednn_conv_sum");
  const ValueId x1 = c1.inputs[0], x2 = c2.inputs[0];
  s.native = native_conv_sum(first, second, x1, x2, y, t);
  s.detail = "conv2 " + second->describe() + "; conv1 " + first->describe();
  s.run = [=](const BufferTable& b) {
    second->run(b.f32(x2), plain, b.f32(y));
    first->run(b.f32(x1), t.bind(b), b.f32(y));
    (void)bias;  // kept alive: the reference fallback of `first` reads it
  };
  return Status();
}

// Horizontal 1x1 convs: one oneDNN convolution on the stacked weights into a per-thread scratch
// tile (NCHW), then each member's channels through its own epilogue into its output.
Status lower_horizontal_conv_onednn(const Graph& g, const FusionGroup& grp, const std::vector<std::vector<int>>& chains,
                                    Precision prec, Step& s) {
  auto h = std::make_shared<HorizontalConv>();
  FUSERT_RETURN_IF_ERROR(decode_horizontal_conv(g, chains, h.get()));
  std::string why;
  cpu::Epilogue none;
  none.out_shape = {h->p.n, h->p.m, h->p.oh, h->p.ow};
  std::shared_ptr<cpu::onednn::ConvAnchor> prim =
      cpu::onednn::ConvAnchor::create(h->p, h->w_cat->data(), h->b_cat->data(), none, &why, prec);
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = group_step(g, grp, "onednn_conv_horizontal");
  s.detail = prim->describe();
  // The shared input may stay in the convolution's native layout unless an epilogue reads it.
  int uses = 0;
  for (const EpilogueTemplate& t : h->eps) uses += operand_uses(t, h->x);
  auto l = std::make_shared<NativeLayout>();
  const int src = uses == 0 ? offer_read(l.get(), h->x, prim->native_input()) : -1;
  l->output = h->ys[0];  // no output layout is offered: the members are written NCHW
  l->apply = [prim, src](const NativeLayout& nl) {
    prim->use_native(src >= 0 && nl.reads[static_cast<size_t>(src)].used, false, false);
  };
  s.native = l;
  s.run = [h, prim, none](const BufferTable& b) {
    h->run(b, [&](const float* x, float* tile) { prim->run(x, none, tile); });
  };
  return Status();
}

// Horizontal Gemms: one oneDNN GEMM on the concatenated weights, member epilogues after it.
Status lower_horizontal_onednn(const Graph& g, const FusionGroup& grp, Precision prec, Step& s) {
  auto chains = member_chains(g, grp);
  const OpKind head = node_at(g, chains[0][0]).op;
  if (head == OpKind::kConv) return lower_horizontal_conv_onednn(g, grp, chains, prec, s);
  if (head != OpKind::kGemm) return error(StatusCode::kUnsupported) << "horizontal group of " << op_name(head);
  HorizontalGemm h;
  FUSERT_RETURN_IF_ERROR(decode_horizontal_gemm(g, chains, &h));
  std::string why;
  std::shared_ptr<const cpu::onednn::HorizontalAnchor> prim =
      cpu::onednn::HorizontalAnchor::create(h.m, h.k, h.widths, h.w_cat->data(), h.b_cat->data(), &why, prec);
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = group_step(g, grp, "onednn_gemm_horizontal");
  s.detail = prim->describe();
  s.run = [h, prim](const BufferTable& b) {
    std::vector<cpu::HorizontalMember> members = h.bind(b);
    prim->run(b.f32(h.a), members);
  };
  return Status();
}

// 1x1 + depthwise block: one primitive, the depthwise conv as the dw post-op of the 1x1 one,
// with oneDNN's single-pass kernel where it has one and it is right (not in NHWC: onednn.h),
// else its two-pass kernel (ref_fused_convolution: its two optimised convolutions one after the
// other, the intermediate in scratch; measured on MobileNetV2, 1 thread, AVX2, activations kept
// blocked: 0.91x of the separate convolutions).
Status lower_pointwise_depthwise_onednn(const Graph& g, const FusionGroup& grp, Step& s) {
  PointwiseDepthwise d;
  FUSERT_RETURN_IF_ERROR(decode_pointwise_depthwise(g, grp, &d));
  for (ValueId v : {d.w1, d.w2})
    if (!is_weight(g, v)) return error(StatusCode::kUnsupported) << "weights are not initializers";
  for (ValueId v : {d.b1, d.b2})
    if (v != kNoValue && !is_weight(g, v)) return error(StatusCode::kUnsupported) << "bias is not an initializer";
  std::string why;
  std::shared_ptr<cpu::onednn::PointwiseDepthwiseAnchor> prim(cpu::onednn::PointwiseDepthwiseAnchor::create(
      d.p1, weight_or_null(g, d.w1), weight_or_null(g, d.b1), d.t1.ep, d.p2, weight_or_null(g, d.w2),
      weight_or_null(g, d.b2), d.t2.ep, true, &why));
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = group_step(g, grp, "onednn_conv_dw");
  s.detail = prim->describe();
  const ValueId x = d.x, y = d.y;
  auto l = std::make_shared<NativeLayout>();
  const int src = offer_read(l.get(), x, prim->native_input());
  l->output = y;
  l->output_strides = prim->native_output();
  l->apply = [prim, src](const NativeLayout& nl) {
    prim->use_native(src >= 0 && nl.reads[static_cast<size_t>(src)].used, nl.output_used);
  };
  s.native = l;
  s.run = [prim, x, y](const BufferTable& b) { prim->run(b.f32(x), b.f32(y)); };
  return Status();
}

Status lower_pool_onednn(const Graph& g, int node, Step& s) {
  const Node& n = node_at(g, node);
  if (g.value(n.inputs[0]).dtype != DType::kF32) return error(StatusCode::kUnsupported) << "non-f32 input";
  cpu::PoolParams p = pool_params(g, n);
  const bool max = n.op == OpKind::kMaxPool;
  if (!max) p.count_include_pad = n.attr_i("count_include_pad") != 0;
  std::string why;
  std::shared_ptr<cpu::onednn::PoolAnchor> prim(cpu::onednn::PoolAnchor::create(p, max, &why));
  if (!prim) return error(StatusCode::kUnsupported) << why;
  s = node_step(g, node, "onednn_pool");
  const ValueId x = n.inputs[0], y = n.outputs[0];
  auto l = std::make_shared<NativeLayout>();
  const int src = offer_read(l.get(), x, prim->native_input());
  l->output = y;
  l->output_strides = prim->native_output();
  l->apply = [prim, src](const NativeLayout& nl) {
    prim->use_native(src >= 0 && nl.reads[static_cast<size_t>(src)].used, nl.output_used);
  };
  l->describe = [prim] { return prim->describe(); };  // NHWC in and out: our own max pool
  s.native = l;
  s.detail = prim->describe();
  s.run = [=](const BufferTable& b) { prim->run(b.f32(x), b.f32(y)); };
  return Status();
}

// A MatMul by a constant B; a first epilogue step that adds a constant per-column vector (the
// Linear layer's bias, exported as MatMul + Add) becomes the matmul's bias and leaves `t`
// (ConvNeXt-Tiny, batch 1, 2 threads: the MatMuls 32.0 -> 28.4 ms as binary_add post-ops go).
std::unique_ptr<cpu::onednn::GemmAnchor> create_matmul_onednn(const Graph& g, const Node& a, EpilogueTemplate* t,
                                                              Precision prec, std::string* why) {
  const cpu::MatMulParams p = matmul_params(g, a);
  const float* b = is_weight(g, a.inputs[1]) ? weight_or_null(g, a.inputs[1]) : nullptr;
  const bool bias_step = b && !t->ep.steps.empty() && t->ep.steps[0].op == cpu::EpOp::kAddTensor &&
                         t->ep.steps[0].mode == cpu::OperandMode::kPerChannel && !t->step_operands.empty() &&
                         t->step_operands[0] != kNoValue && is_weight(g, t->step_operands[0]) &&
                         shape_numel(g.value(t->step_operands[0]).shape) == p.n;
  if (bias_step) {
    EpilogueTemplate rest = *t;
    rest.ep.steps.erase(rest.ep.steps.begin());
    rest.step_operands.erase(rest.step_operands.begin());
    auto prim =
        cpu::onednn::GemmAnchor::create_matmul(p, b, weight_or_null(g, t->step_operands[0]), rest.ep, why, prec);
    if (prim) {
      *t = std::move(rest);
      return prim;
    }
  }
  return cpu::onednn::GemmAnchor::create_matmul(p, b, nullptr, t->ep, why, prec);
}

}  // namespace

Status lower_onednn(const Graph& g, const FusionGroup& grp, bool bf16, Step& s) {
  const Precision prec = bf16 ? Precision::kBf16 : Precision::kF32;
  if (grp.kind == GroupKind::kConvSum) return lower_conv_sum_onednn(g, grp, prec, s);
  if (grp.kind == GroupKind::kPointwiseDepthwise) return lower_pointwise_depthwise_onednn(g, grp, s);
  const OpKind head = node_at(g, grp.nodes[0]).op;
  if (head == OpKind::kMaxPool || head == OpKind::kAveragePool) return lower_pool_onednn(g, grp.nodes[0], s);
  if (head == OpKind::kQLinearConv) return lower_qlinear_conv_onednn(g, grp.nodes[0], s);
  if (head == OpKind::kMatMulInteger) return lower_matmul_integer_onednn(g, grp.nodes[0], s);
  if (grp.kind == GroupKind::kHorizontalGemm) return lower_horizontal_onednn(g, grp, prec, s);
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
  // MatMul's B may be an activation (attention's Q x K^T, P x V): oneDNN takes it at run time.
  if ((!is_weight(g, w) && a.op != OpKind::kMatMul) ||
      (bias != kNoValue && !is_weight(g, bias) && a.op != OpKind::kMatMul))
    return error(StatusCode::kUnsupported) << "weights are not initializers";
  s = grp.kind == GroupKind::kSingle ? node_step(g, grp.nodes[0], "") : group_step(g, grp, "");
  if (a.op == OpKind::kConv) {
    auto prim = cpu::onednn::ConvAnchor::create(conv_params(g, a), weight_or_null(g, w), weight_or_null(g, bias), t.ep,
                                                &why, prec);
    if (!prim) return error(StatusCode::kUnsupported) << why;
    s.kernel = "onednn_conv";
    s.detail = prim->describe();
    std::shared_ptr<cpu::onednn::ConvAnchor> p(std::move(prim));
    s.native = native_layout(p, x, y, t);
    // The sum post-op adds what the destination holds: y may take the residual's buffer.
    const long sum = p->sum_step();
    if (sum >= 0 && static_cast<size_t>(sum) < t.step_operands.size()) {
      const ValueId r = t.step_operands[static_cast<size_t>(sum)];
      if (r != kNoValue && r != x && operand_uses(t, r) == 1) s.in_place_of = r;
    }
    s.run = [=](const BufferTable& b) { p->run(b.f32(x), t.bind(b), b.f32(y)); };
    return Status();
  }
  std::unique_ptr<cpu::onednn::GemmAnchor> prim;
  if (a.op == OpKind::kGemm) {
    prim = cpu::onednn::GemmAnchor::create_gemm(gemm_params(g, a), weight_or_null(g, w), weight_or_null(g, bias), t.ep,
                                                &why, prec);
  } else if (a.op == OpKind::kMatMul) {
    prim = create_matmul_onednn(g, a, &t, prec, &why);
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
