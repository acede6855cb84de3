// CPU lowering of elementwise chains (one pass) and row norms (prologue + LayerNorm/Softmax +
// post chain).
#include <algorithm>
#include <memory>

#include "runtime/cpu/lower_cpu.h"

namespace fusert::lowering {

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

}  // namespace fusert::lowering
