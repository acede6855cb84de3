// Rules of the ONNX ops the import folds into constants (onnx_folded.h computes them): Constant,
// Shape, Size, the window functions, EyeLike, ConstantOfShape, and Range of constants.
#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_rules.h"

namespace fusert::onnx_import {

namespace {

Status fold_constant(RuleCtx& c) {
  FUSERT_ASSIGN_OR_RETURN(Tensor t, constant_value(c.np, c.base_dir, c.loc));
  c.constant = std::move(t);
  c.folded = true;
  return Status();
}

// Shape and Size of static dims (no value when a dim is symbolic: the caller keeps the node).
Status fold_shape(RuleCtx& c) {
  if (c.ins.empty()) return Status();  // the rewrite stage reports it
  FUSERT_ASSIGN_OR_RETURN(c.constant, shape_value(c.g, c.np, c.g.value(c.ins[0]).shape));
  c.folded = true;
  return Status();
}

Status fold_window(RuleCtx& c) {
  FUSERT_ASSIGN_OR_RETURN(Tensor t, window_value(c.g, c.np, c.ins, c.loc));
  c.constant = std::move(t);
  c.folded = true;
  return Status();
}

Status fold_eye_like(RuleCtx& c) {
  FUSERT_ASSIGN_OR_RETURN(Tensor t, eye_like_value(c.g, c.np, c.ins, c.loc));
  c.constant = std::move(t);
  c.folded = true;
  return Status();
}

Status fold_generated(RuleCtx& c) {
  FUSERT_ASSIGN_OR_RETURN(Tensor t, generated_value(c.g, c.np, c.ins, c.base_dir, c.loc));
  c.constant = std::move(t);
  c.folded = true;
  return Status();
}

// A Range of constants folds; of values known at run time only it stays the data-dependent op.
Status fold_range(RuleCtx& c) {
  bool constant_inputs = true;
  for (ValueId v : c.ins) constant_inputs &= v != kNoValue && c.g.value(v).is_constant && !c.g.value(v).data.empty();
  return constant_inputs || c.ins.size() != 3 ? fold_generated(c) : Status();
}

}  // namespace

std::vector<OnnxRule> fold_rules() {
  std::vector<OnnxRule> r;
  r.push_back({"Constant", 1, 0, {"value*"}, fold_constant});
  r.push_back({"Shape", 1, 0, {"start", "end"}, fold_shape});
  r.push_back({"Size", 1, 0, {}, fold_shape});
  for (const char* w : {"HannWindow", "HammingWindow", "BlackmanWindow"})
    r.push_back({w, 1, 0, {"periodic", "output_datatype"}, fold_window});
  r.push_back({"EyeLike", 1, 0, {"dtype", "k"}, fold_eye_like});
  r.push_back({"ConstantOfShape", 1, 0, {"value"}, fold_generated});
  r.push_back({"Range", 1, 0, {}, fold_range});
  return r;
}

}  // namespace fusert::onnx_import
