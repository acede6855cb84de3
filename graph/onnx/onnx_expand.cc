// ONNX nodes imported as several ONNX nodes (graph/onnx/onnx_expand.h).
#include "graph/onnx/onnx_expand.h"

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_lift1d.h"

namespace fusert::onnx_import {

namespace {

// The output `i` of `np` when it names one, else "" (absent or empty).
std::string output_at(const onnx::NodeProto& np, int i) { return i < np.output_size() ? np.output(i) : ""; }

void set_int(onnx::NodeProto* n, const std::string& a, int64_t v) {
  auto* p = n->add_attribute();
  p->set_name(a);
  p->set_type(onnx::AttributeProto::INT);
  p->set_i(v);
}

// SoftmaxCrossEntropyLoss (scores, labels[, weights]) -> (loss[, log_prob]): ONNX's function body,
// LogSoftmax over the class axis (1), then NegativeLogLikelihoodLoss with the node's reduction and
// ignore_index.
Expansion softmax_cross_entropy(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  Expansion e;
  e.opset = 13;  // LogSoftmax over one axis
  std::string lp = output_at(np, 1);
  if (lp.empty()) lp = fresh_name(g, e, name + "/log_prob");
  onnx::NodeProto ls = make_node("LogSoftmax", name + "/log_softmax", {np.input(0)}, {lp});
  set_int(&ls, "axis", 1);
  std::vector<std::string> ins = {lp, np.input_size() > 1 ? np.input(1) : ""};
  if (np.input_size() > 2 && !np.input(2).empty()) ins.push_back(np.input(2));
  onnx::NodeProto nll = make_node("NegativeLogLikelihoodLoss", name + "/nll", ins, {np.output(0)});
  for (const auto& a : np.attribute()) *nll.add_attribute() = a;  // reduction, ignore_index
  e.nodes = {ls, nll};
  return e;
}

// LayerNormalization with Mean (output 1) and InvStdDev (output 2) asked for: the node for Y,
// and the statistics over axes [axis, rank) written out (ONNX's reference: mean, then the mean of
// the squared deviations, 1 / sqrt(var + epsilon)), both with the reduced dims kept as 1.
Result<Expansion> layer_norm_stats(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                   const SourceLoc& loc) {
  Expansion e;
  e.opset = 18;  // reductions take axes as an input
  const ValueId x = g.find_value(np.input(0));
  const int64_t r = static_cast<int64_t>(g.value(x).shape.size());
  const auto* a = find_attr(np, "axis");
  const int64_t axis0 = a ? a->i() : -1, axis = axis0 < 0 ? axis0 + r : axis0;
  if (axis < 0 || axis >= r) {
    return error(StatusCode::kShapeMismatch)
           << loc.str() << ": axis " << axis0 << " out of range for a rank-" << r << " input";
  }
  const auto* eps_attr = find_attr(np, "epsilon");
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < r; ++d) axes.push_back(d);
  const std::string ax = fresh_name(g, e, name + "/stats.axes");
  e.constants.emplace_back(ax, i64_tensor(axes));
  const std::string eps = fresh_name(g, e, name + "/stats.epsilon");
  Tensor et(DType::kF32, {});
  et.f32()[0] = eps_attr ? eps_attr->f() : 1e-5f;
  e.constants.emplace_back(eps, std::move(et));
  onnx::NodeProto y = np;
  y.set_name(name + "/y");
  y.clear_output();
  y.add_output(output_at(np, 0).empty() ? fresh_name(g, e, name + "/y") : np.output(0));
  e.nodes.push_back(y);
  const auto value = [&](int i, const std::string& base) {
    const std::string o = output_at(np, i);
    return o.empty() ? fresh_name(g, e, name + base) : o;
  };
  const std::string mean = value(1, "/stats.mean"), dev = fresh_name(g, e, name + "/stats.dev"),
                    sq = fresh_name(g, e, name + "/stats.sq"), var = fresh_name(g, e, name + "/stats.var"),
                    ve = fresh_name(g, e, name + "/stats.var_eps"), sd = fresh_name(g, e, name + "/stats.std");
  e.nodes.push_back(make_node("ReduceMean", name + "/stats.mean", {np.input(0), ax}, {mean}));
  if (output_at(np, 2).empty()) return e;
  e.nodes.push_back(make_node("Sub", name + "/stats.dev", {np.input(0), mean}, {dev}));
  e.nodes.push_back(make_node("Mul", name + "/stats.sq", {dev, dev}, {sq}));
  e.nodes.push_back(make_node("ReduceMean", name + "/stats.var", {sq, ax}, {var}));
  e.nodes.push_back(make_node("Add", name + "/stats.var_eps", {var, eps}, {ve}));
  e.nodes.push_back(make_node("Sqrt", name + "/stats.std", {ve}, {sd}));
  e.nodes.push_back(make_node("Reciprocal", name + "/stats.inv_std", {sd}, {np.output(2)}));
  return e;
}

// Dropout (inference) with its mask asked for: Identity for Y; the mask, all true, of X's shape.
Expansion dropout_mask(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  Expansion e;
  e.opset = 13;
  onnx::NodeProto y = np;
  y.set_name(name + "/y");
  y.clear_output();
  y.add_output(output_at(np, 0).empty() ? fresh_name(g, e, name + "/y") : np.output(0));
  const std::string shape = fresh_name(g, e, name + "/mask.shape");
  e.nodes.push_back(y);
  e.nodes.push_back(make_node("Shape", name + "/mask.shape", {np.input(0)}, {shape}));
  onnx::NodeProto m = make_node("ConstantOfShape", name + "/mask", {shape}, {np.output(1)});
  auto* v = m.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  v->mutable_t()->add_dims(1);
  v->mutable_t()->add_int32_data(1);
  e.nodes.push_back(m);
  return e;
}

// Pow with a base and exponent of different dtypes (ONNX Pow-12+): a float base with an
// integer exponent casts the exponent to f32; an integer base with a float exponent computes in
// f32 and casts back (truncating, as numpy's astype); two integer dtypes cast the exponent to the
// base's. Returns nullopt when the dtypes agree.
std::optional<Expansion> pow_mixed(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  const ValueId xi = g.find_value(np.input(0)), yi = g.find_value(np.input(1));
  if (xi == kNoValue || yi == kNoValue) return std::nullopt;
  const DType x = g.value(xi).dtype, y = g.value(yi).dtype;
  const auto integer = [](DType t) { return t == DType::kI32 || t == DType::kI64; };
  const auto code = [](DType t) {
    return t == DType::kI32   ? onnx::TensorProto::INT32
           : t == DType::kI64 ? onnx::TensorProto::INT64
                              : onnx::TensorProto::FLOAT;
  };
  if (x == y || !(x == DType::kF32 || integer(x)) || !(y == DType::kF32 || integer(y))) return std::nullopt;
  Expansion e;
  e.opset = 13;
  const auto cast = [&](const std::string& in, DType to, const std::string& out, const std::string& part) {
    onnx::NodeProto c = make_node("Cast", name + part, {in}, {out});
    set_int(&c, "to", code(to));
    e.nodes.push_back(c);
  };
  if (integer(x) && y == DType::kF32) {  // in f32, cast back to the base's dtype
    const std::string xf = fresh_name(g, e, name + "/base_f32");
    cast(np.input(0), DType::kF32, xf, "/base_f32");
    const std::string pf = fresh_name(g, e, name + "/pow_f32");
    e.nodes.push_back(make_node("Pow", name + "/pow_f32", {xf, np.input(1)}, {pf}));
    cast(pf, x, np.output(0), "/cast_back");
    return e;
  }
  const std::string yc = fresh_name(g, e, name + "/exponent");
  cast(np.input(1), x, yc, "/exponent");
  e.nodes.push_back(make_node("Pow", name + "/pow", {np.input(0), yc}, {np.output(0)}));
  return e;
}

}  // namespace

bool is_expanded_op(const std::string& op) { return op == "SoftmaxCrossEntropyLoss"; }

bool expanded_attr(const std::string& op, const std::string& attr) {
  return op == "SoftmaxCrossEntropyLoss" && (attr == "reduction" || attr == "ignore_index");
}

std::string fresh_name(const Graph& g, const Expansion& e, const std::string& base) {
  const auto taken = [&](const std::string& n) {
    if (g.find_value(n) != kNoValue) return true;
    for (const auto& c : e.constants)
      if (c.first == n) return true;
    for (const onnx::NodeProto& p : e.nodes)
      for (const std::string& o : p.output())
        if (o == n) return true;
    return false;
  };
  std::string n = base;
  for (int k = 1; taken(n); ++k) n = base + "_" + std::to_string(k);
  return n;
}

onnx::NodeProto make_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const std::string& i : inputs) n.add_input(i);
  for (const std::string& o : outputs) n.add_output(o);
  return n;
}

Result<std::optional<Expansion>> expand_node(const Graph& g, const onnx::NodeProto& np, int64_t opset,
                                             const std::string& name, const SourceLoc& loc) {
  if (!np.domain().empty() && np.domain() != "ai.onnx") return std::optional<Expansion>();
  const std::string& op = np.op_type();
  const bool has_input = np.input_size() > 0 && !np.input(0).empty() && g.find_value(np.input(0)) != kNoValue;
  if (!has_input || np.output_size() == 0) return std::optional<Expansion>();  // map_node reports it
  if (is_1d_spatial(g, np)) {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, lift_1d(g, np, opset, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "SoftmaxCrossEntropyLoss") return std::optional<Expansion>(softmax_cross_entropy(g, np, name));
  const bool stats = !output_at(np, 1).empty() || !output_at(np, 2).empty();
  if (op == "LayerNormalization" && stats) {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, layer_norm_stats(g, np, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "Pow" && np.input_size() == 2) {
    if (std::optional<Expansion> e = pow_mixed(g, np, name)) return e;
  }
  if (op == "Dropout" && !output_at(np, 1).empty()) return std::optional<Expansion>(dropout_mask(g, np, name));
  return std::optional<Expansion>();
}

}  // namespace fusert::onnx_import
