// Lowering of anchor-led groups (conv/gemm/matmul + epilogue, conv-sum, branch-merge) and of
// elementwise and row-norm chains.
#include <algorithm>
#include <cstring>
#include <memory>

#include "runtime/lower_fused.h"

namespace fusert::lowering {

cpu::ConvParams conv_params(const Graph& g, const Node& n) {
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& w = g.value(n.inputs[1]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  cpu::ConvParams p;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.m = w[0];
  p.kh = w[2];
  p.kw = w[3];
  p.oh = y[2];
  p.ow = y[3];
  const auto& st = n.attr_ints("strides");
  const auto& dl = n.attr_ints("dilations");
  const auto& pd = n.attr_ints("pads");
  p.stride_h = st[0];
  p.stride_w = st[1];
  p.dil_h = dl[0];
  p.dil_w = dl[1];
  p.pad_top = pd[0];
  p.pad_left = pd[1];
  p.pad_bottom = pd[2];
  p.pad_right = pd[3];
  p.group = n.attr_i("group");
  return p;
}

cpu::GemmParams gemm_params(const Graph& g, const Node& n) {
  cpu::GemmParams p;
  const Shape& a = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  p.trans_a = n.attr_i("transA") != 0;
  p.trans_b = n.attr_i("transB") != 0;
  p.m = y[0];
  p.n = y[1];
  p.k = p.trans_a ? a[0] : a[1];
  p.alpha = static_cast<float>(n.attr_f("alpha"));
  p.beta = static_cast<float>(n.attr_f("beta"));
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) {
    Shape c = g.value(n.inputs[2]).shape;
    c.insert(c.begin(), 2 - c.size(), 1);
    p.c_rows = c[0];
    p.c_cols = c[1];
  }
  return p;
}

cpu::MatMulParams matmul_params(const Graph& g, const Node& n) {
  Shape a = g.value(n.inputs[0]).shape, bsh = g.value(n.inputs[1]).shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (bsh.size() == 1) bsh.push_back(1);
  cpu::MatMulParams p;
  p.m = a[a.size() - 2];
  p.k = a.back();
  p.n = bsh.back();
  Shape ab(a.begin(), a.end() - 2), bb(bsh.begin(), bsh.end() - 2);
  size_t r = std::max(ab.size(), bb.size());
  ab.insert(ab.begin(), r - ab.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  Shape ob(r);
  for (size_t i = 0; i < r; ++i) ob[i] = std::max(ab[i], bb[i]);
  p.batch = shape_numel(ob);
  for (int64_t o = 0; o < p.batch; ++o) {  // numpy broadcasting: each output batch's sources
    int64_t rem = o, ia = 0, ib = 0, sa = 1, sb = 1;
    for (size_t d = r; d-- > 0;) {
      int64_t idx = rem % ob[d];
      rem /= ob[d];
      ia += (ab[d] == 1 ? 0 : idx) * sa;
      ib += (bb[d] == 1 ? 0 : idx) * sb;
      sa *= ab[d];
      sb *= bb[d];
    }
    p.a_batch_index.push_back(ia);
    p.b_batch_index.push_back(ib);
  }
  return p;
}

namespace {

ValueId opt_input(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

const float* ptr_or_null(const BufferTable& b, ValueId v) { return v == kNoValue ? nullptr : b.f32(v); }

std::vector<int> tail_of(const FusionGroup& grp, size_t from) {
  return std::vector<int>(grp.nodes.begin() + static_cast<long>(from), grp.nodes.end());
}

}  // namespace

Status lower_anchor_epilogue(const Graph& g, const FusionGroup& grp, Step& s) {
  const Node& a = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const bool conv = a.op == OpKind::kConv;
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 1), a.outputs[0], g.value(a.outputs[0]).shape, conv, &t, &why)) {
    return error(StatusCode::kInternal) << why;
  }
  ValueId y = grp.outputs.at(0);
  ValueId x = a.inputs[0], w = a.inputs[1], bias = opt_input(a, 2);
  if (conv) {
    s = group_step(g, grp, "conv2d_fused");
    cpu::ConvParams p = conv_params(g, a);
    s.run = [=](const BufferTable& b) {
      cpu::conv2d_fused(p, b.f32(x), b.f32(w), ptr_or_null(b, bias), t.bind(b), b.f32(y));
    };
  } else if (a.op == OpKind::kGemm) {
    s = group_step(g, grp, "gemm_fused");
    cpu::GemmParams p = gemm_params(g, a);
    s.run = [=](const BufferTable& b) {
      cpu::gemm_fused(p, b.f32(x), b.f32(w), ptr_or_null(b, bias), t.bind(b), b.f32(y));
    };
  } else if (a.op == OpKind::kMatMul && t.ep.tail != cpu::EpTail::kGlobalAvgPool) {
    s = group_step(g, grp, "matmul_fused");
    cpu::MatMulParams p = matmul_params(g, a);
    s.run = [=](const BufferTable& b) { cpu::matmul_fused(p, b.f32(x), b.f32(w), t.bind(b), b.f32(y)); };
  } else {
    return error(StatusCode::kUnsupported) << "anchor " << op_name(a.op) << " with this epilogue";
  }
  return Status();
}

Status lower_elementwise(const Graph& g, const FusionGroup& grp, Step& s) {
  s = group_step(g, grp, "elementwise_program");
  cpu::ElementwiseProgram prog;
  const Shape out = g.value(grp.outputs.at(0)).shape;
  prog.out_shape = out;
  std::vector<ValueId> inputs;
  auto input_index = [&](ValueId v) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (inputs[i] == v) return static_cast<int>(i);
    inputs.push_back(v);
    Shape t = g.value(v).shape;
    t.insert(t.begin(), out.size() - t.size(), 1);
    std::vector<int64_t> strides(out.size(), 0);
    int64_t stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      strides[d] = t[d] == 1 ? 0 : stride;
      stride *= t[d];
    }
    prog.input_strides.push_back(strides);
    return static_cast<int>(inputs.size() - 1);
  };
  const Node& head = g.nodes[static_cast<size_t>(grp.nodes[0])];
  ValueId cur = head.inputs[0];
  prog.loads.push_back({0, input_index(cur)});
  for (int ni : grp.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    EpilogueTemplate t;
    std::string why;
    if (!build_epilogue(g, {ni}, cur, out, false, &t, &why) || t.ep.steps.size() != 1)
      return error(StatusCode::kInternal) << why;
    cpu::ElementwiseInstr in;
    in.op = t.ep.steps[0].op;
    in.a = t.ep.steps[0].a;
    in.b = t.ep.steps[0].b;
    in.operand_first = t.ep.steps[0].operand_first;
    if (t.step_operands[0] != kNoValue) in.input = input_index(t.step_operands[0]);
    prog.code.push_back(in);
    cur = n.outputs[0];
  }
  prog.stores.push_back({0, 0});
  ValueId y = grp.outputs.at(0);
  s.run = [=](const BufferTable& b) {
    std::vector<const float*> ins;
    for (ValueId v : inputs) ins.push_back(b.f32(v));
    cpu::run_elementwise_program(prog, ins, {b.f32(y)});
  };
  return Status();
}

Status lower_row_norm(const Graph& g, const FusionGroup& grp, Step& s) {
  s = group_step(g, grp, "norm_rows_fused");
  size_t norm_at = 0;
  while (g.nodes[static_cast<size_t>(grp.nodes[norm_at])].op != OpKind::kLayerNormalization &&
         g.nodes[static_cast<size_t>(grp.nodes[norm_at])].op != OpKind::kSoftmax)
    ++norm_at;
  const Node& norm = g.nodes[static_cast<size_t>(grp.nodes[norm_at])];
  const Shape& shape = g.value(norm.inputs[0]).shape;
  int64_t inner = shape.back(), outer = shape_numel(shape) / inner;
  const Node& head = g.nodes[static_cast<size_t>(grp.nodes[0])];
  ValueId x = norm.inputs[0];
  if (norm_at > 0) {  // the prologue's running input is the head operand with the norm's shape
    x = kNoValue;
    for (ValueId in : head.inputs)
      if (x == kNoValue && in != kNoValue && g.value(in).shape == shape) x = in;
    if (x == kNoValue)
      return error(StatusCode::kInternal)
             << "row-norm prologue head '" << head.name << "' has no input of shape " << shape_str(shape);
  }
  EpilogueTemplate pro, post;
  std::string why;
  std::vector<int> pro_nodes(grp.nodes.begin(), grp.nodes.begin() + static_cast<long>(norm_at));
  // Operands are full-shape or scalars (the planner guarantees it), so flat indexing is exact.
  if (!build_epilogue(g, pro_nodes, x, shape, false, &pro, &why)) return error(StatusCode::kInternal) << why;
  if (!build_epilogue(g, tail_of(grp, norm_at + 1), norm.outputs[0], shape, false, &post, &why))
    return error(StatusCode::kInternal) << why;
  for (const auto* steps : {&pro.ep.steps, &post.ep.steps}) {
    for (const cpu::EpilogueStep& e : *steps) {
      if (e.mode != cpu::OperandMode::kFull && e.mode != cpu::OperandMode::kScalar && e.op >= cpu::EpOp::kAddTensor &&
          e.op <= cpu::EpOp::kPowTensor) {
        return error(StatusCode::kInternal) << "row-norm group operand is neither full-shape nor scalar";
      }
    }
  }
  bool ln = norm.op == OpKind::kLayerNormalization;
  ValueId scale = ln ? norm.inputs[1] : kNoValue, shift = ln ? opt_input(norm, 2) : kNoValue;
  float eps = ln ? static_cast<float>(norm.attr_f("epsilon")) : 0.f;
  ValueId y = grp.outputs.at(0);
  s.run = [=](const BufferTable& b) {
    cpu::norm_rows_fused(outer, inner, b.f32(x), pro.bind(b).steps,
                         ln ? cpu::RowNorm::kLayerNorm : cpu::RowNorm::kSoftmax, ptr_or_null(b, scale),
                         ptr_or_null(b, shift), eps, post.bind(b).steps, b.f32(y));
  };
  return Status();
}

Status lower_conv_sum(const Graph& g, const FusionGroup& grp, Step& s) {
  const Node& c1 = g.nodes[static_cast<size_t>(grp.nodes[0])];
  const Node& c2 = g.nodes[static_cast<size_t>(grp.nodes[1])];
  const Node& join = g.nodes[static_cast<size_t>(grp.nodes[2])];
  if (c1.op != OpKind::kConv || c2.op != OpKind::kConv || join.op != OpKind::kAdd)
    return error(StatusCode::kInternal) << "conv-sum group shape";
  s = group_step(g, grp, "conv2d_sum_fused");
  EpilogueTemplate t;
  std::string why;
  if (!build_epilogue(g, tail_of(grp, 3), join.outputs[0], g.value(join.outputs[0]).shape, true, &t, &why))
    return error(StatusCode::kInternal) << why;
  auto bias = std::make_shared<std::vector<float>>(static_cast<size_t>(g.value(c1.inputs[1]).shape[0]), 0.f);
  for (const Node* c : {&c1, &c2}) {
    if (ValueId bv = opt_input(*c, 2); bv != kNoValue)
      for (size_t i = 0; i < bias->size(); ++i) (*bias)[i] += g.value(bv).data.f32()[i];
  }
  cpu::ConvParams p1 = conv_params(g, c1), p2 = conv_params(g, c2);
  ValueId x1 = c1.inputs[0], w1 = c1.inputs[1], x2 = c2.inputs[0], w2 = c2.inputs[1], y = grp.outputs.at(0);
  s.run = [=](const BufferTable& b) {
    cpu::conv2d_sum_fused(p1, b.f32(x1), b.f32(w1), p2, b.f32(x2), b.f32(w2), bias->data(), t.bind(b), b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
