// Rules of ops that older opsets spell otherwise or that fusert expresses otherwise: Dropout (the
// identity at inference), Sum/Mean of one or two inputs, Scatter, CastLike, Upsample and
// Resize-10, PRelu-6's slope, the softmax family before opset 13, the recurrent ops' activation
// lists and RoiAlign-10's coordinates.
#include <algorithm>

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_rules.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert::onnx_import {

namespace {

// Inference: the identity, unless training_mode (input 2, opset 12) is on or not constant.
Status dropout(RuleCtx& c) {
  if (c.n_outs > 1) return error(StatusCode::kUnsupported) << c.loc.str() << ": Dropout's mask output";
  if (c.ins.size() > 2) {
    const Value& t = c.g.value(c.ins[2]);
    if (t.dtype != DType::kBool)
      return error(StatusCode::kInvalidArgument)
             << c.loc.str() << ": Dropout's training_mode (input 2) is " << dtype_name(t.dtype) << "; ONNX has it bool";
    if (!t.is_constant || t.data.numel() != 1 || static_cast<const uint8_t*>(t.data.raw())[0] != 0) {
      return error(StatusCode::kUnsupported) << c.loc.str() << ": Dropout in training mode (training_mode input "
                                             << (t.is_constant ? "true" : "not a constant") << ")";
    }
  }
  c.fop = "Identity";
  c.ins.resize(1);
  return Status();
}

// Sum and Mean of one input: the identity; Sum of two: Add (an epilogue step, where Sum's kernel
// is opaque).
Status sum_or_mean(RuleCtx& c) {
  if (c.ins.size() == 1) c.fop = "Identity";
  if (c.op() == "Sum" && c.ins.size() == 2) c.fop = "Add";
  return Status();
}

Status scatter(RuleCtx& c) {  // opset 9-10's name
  c.fop = "ScatterElements";
  return Status();
}

Status cast_like(RuleCtx& c) {  // -> Cast to input 1's dtype (cast_like_attrs sets `to`)
  if (c.ins.size() != 2) return error(StatusCode::kParseError) << c.loc.str() << ": CastLike takes 2 inputs";
  c.fop = "Cast";
  c.ins.resize(1);
  return Status();
}

// TensorProto type code of a dtype Cast converts to (0: none): the inverse of dtype_of over
// Cast's targets.
int64_t like_code(DType t) {
  for (int code :
       {onnx::TensorProto::FLOAT, onnx::TensorProto::INT32, onnx::TensorProto::INT64, onnx::TensorProto::BOOL}) {
    DType d;
    if (dtype_of(code, &d) && d == t) return code;
  }
  return 0;
}

Status cast_like_attrs(RuleCtx& c, Node* n) {
  const DType like = c.g.value(c.g.find_value(c.np.input(1))).dtype;
  const int64_t code = like_code(like);
  if (code == 0) return error(StatusCode::kUnsupported) << c.loc.str() << ": CastLike to " << dtype_name(like);
  n->attrs["to"].type = AttrType::kInt;
  n->attrs["to"].i = code;
  return Status();
}

// Upsample and Resize-10: (X, scales) -> Resize (X, roi, scales).
Status upsample(RuleCtx& c) {
  if (c.op() == "Upsample" && find_attr(c.np, "scales")) {
    const auto* a = find_attr(c.np, "scales");
    Tensor sc(DType::kF32, {static_cast<int64_t>(a->floats_size())});
    std::copy(a->floats().begin(), a->floats().end(), sc.f32());
    c.ins.resize(1);
    c.ins.push_back(add_rule_const(c.g, c.name + ".scales", std::move(sc), c.loc));
  }
  if (c.ins.size() != 2)
    return error(StatusCode::kParseError) << c.loc.str() << ": " << c.op() << " takes X and scales";
  c.ins.insert(c.ins.begin() + 1, kNoValue);
  c.fop = "Resize";
  return Status();
}

// Their mode (Upsample-7's "bilinear" is "linear") with the coordinates ONNX Runtime uses for
// them: asymmetric, nearest rounded down.
Status upsample_attrs(RuleCtx& c, Node* n) {
  std::string mode = "nearest";
  if (const auto* a = find_attr(c.np, "mode")) mode = a->s();
  if (mode == "bilinear") mode = "linear";
  n->attrs["mode"] = AttrValue{};
  n->attrs["mode"].type = AttrType::kString;
  n->attrs["mode"].s = mode;
  for (const auto& [k, v] : {std::pair<const char*, const char*>{"coordinate_transformation_mode", "asymmetric"},
                             {"nearest_mode", "floor"}}) {
    n->attrs[k].type = AttrType::kString;
    n->attrs[k].s = v;
  }
  return Status();
}

Status prelu_6(RuleCtx& c) {  // PRelu-6: a [C] slope is per channel (axis 1)
  if (c.ins.size() != 2) return Status();
  const Value& x = c.g.value(c.ins[0]);
  const Value& sl = c.g.value(c.ins[1]);
  if (sl.shape.size() == 1 && x.shape.size() > 2 && sl.shape[0] == x.shape[1] && sl.shape[0] != 1) {
    if (!sl.is_constant || sl.data.empty())
      return error(StatusCode::kUnsupported)
             << c.loc.str() << ": PRelu (opset " << c.opset << ") slope must be a constant";
    Shape s(x.shape.size() - 1, 1);
    s[0] = sl.shape[0];
    c.ins[1] = add_rule_const(c.g, c.name + ".slope", sl.data.clone().reshaped(s), c.loc);
  }
  return Status();
}

// Softmax, LogSoftmax and Hardmax below opset 13 normalise over every dim from `axis` on: over
// the last dim they are the op itself; over more, the expansion (onnx_expand.cc, legacy_softmax)
// has already replaced the node, so an axis reaching here is out of range or the last.
Status last_axis_only(RuleCtx& c) {
  const int64_t r = static_cast<int64_t>(c.g.value(c.ins.at(0)).shape.size());
  const auto* a = find_attr(c.np, "axis");
  const int64_t axis = a ? (a->i() < 0 ? a->i() + r : a->i()) : 1;
  if (axis < 0 || axis >= r) {
    return error(StatusCode::kShapeMismatch)
           << c.loc.str() << ": axis " << (a ? a->i() : 1) << " out of range for a rank-" << r << " input";
  }
  if (axis != r - 1) {
    return error(StatusCode::kUnsupported)
           << c.loc.str() << ": " << c.op() << " (opset " << c.opset << ") over dims " << axis << ".." << r - 1
           << " of a rank-" << r << " input (fusert's " << c.op() << " runs over one axis, the last here)";
  }
  return Status();
}

Status recurrent_attrs(RuleCtx& c, Node* n) {  // the activations list, joined by commas
  n->attrs["activations"].type = AttrType::kString;
  if (const auto* a = find_attr(c.np, "activations"))
    for (const std::string& f : a->strings())
      n->attrs["activations"].s += (n->attrs["activations"].s.empty() ? "" : ",") + f;
  return Status();
}

// RoiAlign-10 has no coordinate_transformation_mode: its regions start at the pixel corner.
Status roi_align_10_attrs(RuleCtx& c, Node* n) {
  (void)c;
  n->attrs["coordinate_transformation_mode"].type = AttrType::kString;
  n->attrs["coordinate_transformation_mode"].s = "output_half_pixel";
  return Status();
}

}  // namespace

std::vector<OnnxRule> compat_rules() {
  std::vector<OnnxRule> r;
  r.push_back({"Dropout", 1, 0, {"ratio", "seed", "is_test"}, nullptr, dropout});
  r.push_back({"Sum", 1, 0, {}, nullptr, sum_or_mean});
  r.push_back({"Mean", 1, 0, {}, nullptr, sum_or_mean});
  r.push_back({"Scatter", 1, 0, {}, nullptr, scatter});
  r.push_back({"CastLike", 1, 0, {"saturate"}, nullptr, cast_like, cast_like_attrs});
  r.push_back({"Cast", 1, 0, {"saturate"}});  // opset 19: only float8 targets saturate
  r.push_back({"Upsample", 1, 0, {"scales", "mode"}, nullptr, upsample, upsample_attrs});
  r.push_back({"Resize", 1, 10, {}, nullptr, upsample, upsample_attrs});
  r.push_back({"PRelu", 1, 6, {}, nullptr, prelu_6});
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"})
    r.push_back({op, 1, 12, {"axis"}, nullptr, last_axis_only});
  r.push_back({"BatchNormalization", 1, 0, {"spatial", "is_test", "consumed_inputs"}});
  for (const char* op : {"RNN", "GRU", "LSTM"})  // a list: recurrent_attrs joins it
    r.push_back({op, 1, 0, {"activations"}, nullptr, nullptr, recurrent_attrs});
  r.push_back({"RoiAlign", 1, 15, {}, nullptr, nullptr, roi_align_10_attrs});
  return r;
}

}  // namespace fusert::onnx_import
