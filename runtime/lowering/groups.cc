// Decoding of elementwise and row-norm groups into their backend-neutral form (spec.h): what
// the CPU and CUDA lowerings of these kinds both read.
#include <algorithm>

#include "runtime/lowering/spec.h"

namespace fusert::lowering {

Status decode_elementwise(const Graph& g, const FusionGroup& grp, ValueId* x, EpilogueTemplate* t) {
  const Shape out = g.value(grp.outputs.at(0)).shape;
  ValueId cur = node_at(g, grp.nodes[0]).inputs[0];
  *x = cur;
  *t = EpilogueTemplate();
  for (int ni : grp.nodes) {
    EpilogueTemplate one;
    std::string why;
    if (!build_epilogue(g, {ni}, cur, out, false, &one, &why) || one.ep.steps.size() != 1) {
      return error(StatusCode::kUnsupported)
             << "'" << node_at(g, ni).name << "' is not an elementwise step" << (why.empty() ? "" : ": ") << why;
    }
    t->ep.steps.push_back(one.ep.steps[0]);
    t->step_operands.push_back(one.step_operands[0]);
    t->constants.insert(t->constants.end(), one.constants.begin(), one.constants.end());
    cur = node_at(g, ni).outputs[0];
  }
  return Status();
}

Status decode_row_norm(const Graph& g, const FusionGroup& grp, RowNormGroup* r) {
  auto is_norm = [&](int ni) {
    const OpKind op = node_at(g, ni).op;
    return op == OpKind::kLayerNormalization || op == OpKind::kSoftmax;
  };
  r->norm_at = static_cast<size_t>(std::find_if(grp.nodes.begin(), grp.nodes.end(), is_norm) - grp.nodes.begin());
  if (r->norm_at == grp.nodes.size()) return error(StatusCode::kInternal) << "row-norm group without a norm";
  const Node& norm = node_at(g, grp.nodes[r->norm_at]);
  r->shape = g.value(norm.inputs[0]).shape;
  const Shape& shape = r->shape;
  r->layer_norm = norm.op == OpKind::kLayerNormalization;
  int64_t axis = norm.attr_i("axis");
  if (axis < 0) axis += static_cast<int64_t>(shape.size());
  if (axis != static_cast<int64_t>(shape.size()) - 1) {
    return error(StatusCode::kUnsupported) << (r->layer_norm ? "LayerNorm" : "softmax") << " not over the last axis";
  }
  r->inner = shape.back();
  r->outer = shape_numel(shape) / std::max<int64_t>(r->inner, 1);
  r->x = norm.inputs[0];
  if (r->norm_at > 0) {  // the prologue's running input is the head operand with the norm's shape
    const Node& head = node_at(g, grp.nodes[0]);
    r->x = kNoValue;
    for (ValueId in : head.inputs)
      if (r->x == kNoValue && in != kNoValue && g.value(in).shape == shape) r->x = in;
    if (r->x == kNoValue) {
      return error(StatusCode::kInternal)
             << "row-norm prologue head '" << head.name << "' has no input of shape " << shape_str(shape);
    }
  }
  std::string why;
  const std::vector<int> pro_nodes(grp.nodes.begin(), grp.nodes.begin() + static_cast<long>(r->norm_at));
  if (!build_epilogue(g, pro_nodes, r->x, shape, false, &r->pro, &why) ||
      !build_epilogue(g, tail_of(grp, r->norm_at + 1), norm.outputs[0], shape, false, &r->post, &why))
    return error(StatusCode::kUnsupported) << why;
  if (r->layer_norm) {
    r->scale = norm.inputs[1];
    r->shift = opt_input(norm, 2);
    r->eps = static_cast<float>(norm.attr_f("epsilon"));
  }
  return Status();
}

}  // namespace fusert::lowering
