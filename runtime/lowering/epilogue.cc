// The epilogue builder (a chain of graph nodes -> kern::EpOp steps with operands), the step
// skeleton of a group and the view decision: backend-neutral, read by every lowering.
#include <set>

#include "graph/unary.h"
#include "runtime/lowering/spec.h"

namespace fusert {

namespace lowering {

namespace {

bool unary_op(const Node& n, kern::EpilogueStep* e, const Graph& g) {
  switch (n.op) {
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_STEP_##Row(Name)
#define FUSERT_UNARY_STEP_0(Name)
#define FUSERT_UNARY_STEP_1(Name)  \
  case OpKind::k##Name:            \
    e->op = kern::EpOp::k##Name;   \
    unary_params(n, &e->a, &e->b); \
    return true;
#define FUSERT_UNARY_STEP_2(Name)
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_STEP_0
#undef FUSERT_UNARY_STEP_1
#undef FUSERT_UNARY_STEP_2
    case OpKind::kIdentity:
      e->op = kern::EpOp::kIdentity;
      return true;
    case OpKind::kGelu:
      e->op = n.attr_s("approximate") == "tanh" ? kern::EpOp::kGeluTanh : kern::EpOp::kGelu;
      return true;
    case OpKind::kClip:
      e->op = kern::EpOp::kClip;
      e->a = static_cast<float>(n.attr_f("min"));
      e->b = static_cast<float>(n.attr_f("max"));
      if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) e->a = g.value(n.inputs[1]).data.f32()[0];
      if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) e->b = g.value(n.inputs[2]).data.f32()[0];
      return true;
    default:
      return false;
  }
}

// Operand indexing of `t` against the running value's logical shape.
void operand_mode(const Shape& t_shape, const Shape& out, bool conv, kern::EpilogueStep* e) {
  Shape t = t_shape;
  t.insert(t.begin(), out.size() > t.size() ? out.size() - t.size() : 0, 1);
  int64_t numel = shape_numel(t);
  if (t == out) {
    e->mode = kern::OperandMode::kFull;
    return;
  }
  if (numel == 1) {
    e->mode = kern::OperandMode::kScalar;
    return;
  }
  // GEMM / MatMul outputs of any rank: per column is the last dim alone ([N], [1, 1, N]), per
  // row every dim but the last ([B, S, 1]: the flattened row b * S + s); the kernels index them
  // flat % N and flat / N.
  const size_t last = out.size() - 1;
  bool per_channel = conv && out.size() >= 2 && t[1] == out[1] && numel == out[1];
  bool per_col = !conv && out.size() >= 2 && t[last] == out[last] && numel == out[last];
  bool per_row = !conv && out.size() >= 2 && t[last] == 1 && numel * out[last] == shape_numel(out);
  if (per_channel || per_col) {
    e->mode = kern::OperandMode::kPerChannel;
    return;
  }
  if (per_row) {
    e->mode = kern::OperandMode::kPerRow;
    return;
  }
  e->mode = kern::OperandMode::kStrided;
  e->strides.assign(out.size(), 0);
  int64_t stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    e->strides[d] = t[d] == 1 ? 0 : stride;
    stride *= t[d];
  }
}

bool binary_op(OpKind op, kern::EpOp* out) {
  switch (op) {
    case OpKind::kAdd:
      *out = kern::EpOp::kAddTensor;
      return true;
    case OpKind::kSub:
      *out = kern::EpOp::kSubTensor;
      return true;
    case OpKind::kMul:
      *out = kern::EpOp::kMulTensor;
      return true;
    case OpKind::kDiv:
      *out = kern::EpOp::kDivTensor;
      return true;
    case OpKind::kPow:
      *out = kern::EpOp::kPowTensor;
      return true;
    default:
      return false;
  }
}

}  // namespace

kern::Epilogue EpilogueTemplate::bind(const BufferTable& b) const {
  kern::Epilogue e = ep;
  for (size_t i = 0; i < e.steps.size(); ++i)
    if (step_operands[i] != kNoValue) e.steps[i].operand = b.f32(step_operands[i]);
  for (size_t i = 0; i < e.post.size(); ++i)
    if (post_operands[i] != kNoValue) e.post[i].operand = b.f32(post_operands[i]);
  if (ln_scale != kNoValue) e.ln_scale = b.f32(ln_scale);
  if (ln_shift != kNoValue) e.ln_shift = b.f32(ln_shift);
  return e;
}

bool build_epilogue(const Graph& g, const std::vector<int>& nodes, ValueId cur, const Shape& out_shape, bool conv,
                    EpilogueTemplate* t, std::string* why) {
  t->ep.out_shape = out_shape;
  bool after_tail = false;
  for (int ni : nodes) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    kern::EpilogueStep e;
    ValueId operand = kNoValue;
    if (n.op == OpKind::kGlobalAveragePool && conv && !after_tail) {
      t->ep.tail = kern::EpTail::kGlobalAvgPool;
      after_tail = true;
    } else if (n.op == OpKind::kLayerNormalization && !conv && !after_tail) {
      t->ep.tail = kern::EpTail::kLayerNorm;
      t->ep.ln_epsilon = static_cast<float>(n.attr_f("epsilon"));
      t->ln_scale = n.inputs[1];
      t->ln_shift = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
      after_tail = true;
    } else if (unary_op(n, &e, g)) {
    } else if (binary_op(n.op, &e.op) && n.inputs.size() == 2) {
      bool first = n.inputs[0] == cur;
      operand = first ? n.inputs[1] : n.inputs[0];
      e.operand_first = !first;
      operand_mode(g.value(operand).shape, out_shape, conv, &e);
    } else {
      *why = std::string("'") + n.name + "' (" + op_name(n.op) + ") is not an epilogue op";
      return false;
    }
    if (n.op != OpKind::kGlobalAveragePool && n.op != OpKind::kLayerNormalization) {
      (after_tail ? t->ep.post : t->ep.steps).push_back(e);
      (after_tail ? t->post_operands : t->step_operands).push_back(operand);
    }
    cur = n.outputs[0];
  }
  return true;
}

bool per_column_bias(const Graph& g, const Node& n) {
  if (n.inputs.size() < 3 || n.inputs[2] == kNoValue) return true;
  Shape c = g.value(n.inputs[2]).shape;
  return shape_numel(c) == 1 || c.size() == 1 || (c.size() == 2 && c[0] == 1);
}

void bias_as_epilogue(const Graph& g, const Node& n, const Shape& out, EpilogueTemplate* t) {
  const Tensor& c = g.value(n.inputs[2]).data;
  const float beta = static_cast<float>(n.attr_f("beta"));
  auto scaled = std::make_shared<std::vector<float>>(c.f32(), c.f32() + c.numel());
  for (float& v : *scaled) v *= beta;
  kern::EpilogueStep e;
  e.op = kern::EpOp::kAddTensor;
  operand_mode(c.shape(), out, false, &e);
  e.operand = scaled->data();
  t->ep.steps.insert(t->ep.steps.begin(), e);
  t->step_operands.insert(t->step_operands.begin(), kNoValue);
  t->constants.push_back(scaled);
}

Step group_step(const Graph& g, const FusionGroup& grp, const char* kernel) {
  Step s;
  s.name = grp.name;
  s.kernel = kernel;
  s.nodes = grp.nodes;
  std::set<int> members(grp.nodes.begin(), grp.nodes.end());
  std::set<ValueId> seen;
  for (int ni : grp.nodes) {
    for (ValueId in : g.nodes[static_cast<size_t>(ni)].inputs) {
      if (in == kNoValue || seen.count(in)) continue;
      int p = g.value(in).producer;
      if (p >= 0 && members.count(p)) continue;
      seen.insert(in);
      s.inputs.push_back(in);
    }
  }
  s.outputs = grp.outputs;
  return s;
}

ValueId view_source(const Graph& g, int ni) {
  const Node& n = node_at(g, ni);
  if (is_alias_op(n.op) && g.value(n.inputs[0]).dtype == g.value(n.outputs[0]).dtype) return n.inputs[0];
  return kNoValue;
}

Step node_step(const Graph& g, int ni, const char* kernel) {
  const Node& n = node_at(g, ni);
  Step s;
  s.name = n.name;
  s.kernel = kernel;
  s.nodes = {ni};
  for (ValueId in : n.inputs)
    if (in != kNoValue) s.inputs.push_back(in);
  s.outputs = n.outputs;
  return s;
}

Step view_step(const Graph& g, int ni) {
  const Node& n = node_at(g, ni);
  Step s;  // a view: no kernel, the output shares the input's buffer
  s.name = n.name;
  s.kernel = "alias";
  s.nodes = {ni};
  s.alias_of = view_source(g, ni);
  s.inputs = {n.inputs[0]};
  s.outputs = n.outputs;
  return s;
}

}  // namespace lowering

}  // namespace fusert
