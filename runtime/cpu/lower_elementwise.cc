// CPU lowering of elementwise chains (one pass) and row norms (prologue + LayerNorm/Softmax +
// post chain).
#include <algorithm>
#include <memory>

#include "runtime/cpu/layout_follow.h"
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
  ValueId x = kNoValue;
  EpilogueTemplate t;
  FUSERT_RETURN_IF_ERROR(decode_elementwise(g, grp, &x, &t));
  prog.loads.push_back({0, input_index(x)});
  for (size_t i = 0; i < t.ep.steps.size(); ++i) {
    cpu::ElementwiseInstr in;
    in.op = t.ep.steps[i].op;
    in.a = t.ep.steps[i].a;
    in.b = t.ep.steps[i].b;
    in.operand_first = t.ep.steps[i].operand_first;
    if (t.step_operands[i] != kNoValue) in.input = input_index(t.step_operands[i]);
    prog.code.push_back(in);
  }
  prog.stores.push_back({0, 0});
  ValueId y = grp.outputs.at(0);
  s.run = [=](const BufferTable& b) {
    std::vector<const float*> ins;
    for (ValueId v : inputs) ins.push_back(b.f32(v));
    cpu::run_elementwise_program(prog, ins, {b.f32(y)});
  };
  cpu_lowering::follow_elementwise_program(g, inputs, y, prog, s);
  return Status();
}

Status lower_row_norm(const Graph& g, const FusionGroup& grp, Step& s) {
  s = group_step(g, grp, "norm_rows_fused");
  RowNormGroup r;
  FUSERT_RETURN_IF_ERROR(decode_row_norm(g, grp, &r));
  // The CPU kernel indexes operands flat: they must be full-shape or scalars (the planner
  // guarantees it for row-norm groups).
  for (const auto* steps : {&r.pro.ep.steps, &r.post.ep.steps}) {
    for (const cpu::EpilogueStep& e : *steps) {
      if (e.mode != cpu::OperandMode::kFull && e.mode != cpu::OperandMode::kScalar && e.op >= cpu::EpOp::kAddTensor &&
          e.op <= cpu::EpOp::kPowTensor) {
        return error(StatusCode::kInternal) << "row-norm group operand is neither full-shape nor scalar";
      }
    }
  }
  const ValueId y = grp.outputs.at(0);
  s.run = [r, y](const BufferTable& b) {
    cpu::norm_rows_fused(r.outer, r.inner, b.f32(r.x), r.pro.bind(b).steps,
                         r.layer_norm ? cpu::RowNorm::kLayerNorm : cpu::RowNorm::kSoftmax, ptr_or_null(b, r.scale),
                         ptr_or_null(b, r.shift), r.eps, r.post.bind(b).steps, b.f32(y));
  };
  return Status();
}

}  // namespace fusert::lowering
