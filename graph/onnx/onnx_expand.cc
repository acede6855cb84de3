// ONNX nodes imported as several ONNX nodes (graph/onnx/onnx_expand.h).
#include "graph/onnx/onnx_expand.h"

#include <limits>
#include <map>
#include <set>

#include "graph/onnx/onnx_einsum.h"
#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_if.h"
#include "graph/onnx/onnx_lift1d.h"
#include "graph/onnx/onnx_loop.h"
#include "graph/onnx/onnx_qlinear.h"
#include "graph/onnx/onnx_scan.h"

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

// Add, Sub, Mul, Div, Pow and the comparisons below opset 7 with broadcast = 1: B is aligned
// with A from `axis` on (default: A's last dims, as numpy), so B gets trailing 1s; without
// broadcast the shapes must be equal. The node without those attributes (opset 13).
Result<std::optional<Expansion>> legacy_broadcast(const Graph& g, const onnx::NodeProto& np, const std::string& name,
                                                  const SourceLoc& loc) {
  const auto* b = find_attr(np, "broadcast");
  const auto* ax = find_attr(np, "axis");
  if ((!b && !ax) || np.input_size() != 2) return std::optional<Expansion>();
  const ValueId ai = g.find_value(np.input(0)), bi = g.find_value(np.input(1));
  if (ai == kNoValue || bi == kNoValue) return std::optional<Expansion>();
  const Shape &as = g.value(ai).shape, &bs = g.value(bi).shape;
  const int64_t ra = static_cast<int64_t>(as.size()), rb = static_cast<int64_t>(bs.size());
  Expansion e;
  e.opset = 13;
  onnx::NodeProto n = np;
  n.clear_attribute();
  if (!b || b->i() == 0) {
    if (as != bs) {
      return error(StatusCode::kShapeMismatch) << loc.str() << ": " << shape_str(as) << " and " << shape_str(bs)
                                               << " without broadcast = 1 (opset < 7: the shapes must be equal)";
    }
    e.nodes.push_back(n);
    return std::optional<Expansion>(std::move(e));
  }
  const int64_t axis = ax ? (ax->i() < 0 ? ax->i() + ra : ax->i()) : ra - rb;
  if (axis < 0 || axis + rb > ra) {
    if (!ax)
      return error(StatusCode::kShapeMismatch) << loc.str() << ": B " << shape_str(bs) << " has more dims than A "
                                               << shape_str(as) << " (broadcast = 1 aligns B inside A)";
    return error(StatusCode::kShapeMismatch)
           << loc.str() << ": B " << shape_str(bs) << " at axis " << ax->i() << " does not fit in A " << shape_str(as);
  }
  if (axis + rb < ra) {
    std::vector<int64_t> trailing;
    for (int64_t d = rb; d < ra - axis; ++d) trailing.push_back(d);
    const std::string axes = fresh_name(g, e, name + "/b.axes"), b2 = fresh_name(g, e, name + "/b");
    e.constants.emplace_back(axes, i64_tensor(trailing));
    e.nodes.push_back(make_node("Unsqueeze", name + "/b", {np.input(1), axes}, {b2}));
    n.set_input(1, b2);
  }
  e.nodes.push_back(n);
  return std::optional<Expansion>(std::move(e));
}

// GlobalMaxPool: ReduceMax over the spatial dims, kept as 1s.
Expansion global_max_pool(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  Expansion e;
  e.opset = 13;
  const int64_t r = static_cast<int64_t>(g.value(g.find_value(np.input(0))).shape.size());
  onnx::NodeProto n = make_node("ReduceMax", name + "/reduce_max", {np.input(0)}, {np.output(0)});
  auto* a = n.add_attribute();
  a->set_name("axes");
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t d = 2; d < r; ++d) a->add_ints(d);
  set_int(&n, "keepdims", 1);
  e.nodes.push_back(n);
  return e;
}

// IsNaN: Not(Equal(x, x)). IsInf: Equal(x, +inf) and / or Equal(x, -inf) (detect_positive,
// detect_negative), on f32.
Expansion is_nan_inf(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  Expansion e;
  e.opset = 13;
  const std::string& x = np.input(0);
  if (np.op_type() == "IsNaN") {
    const std::string eq = fresh_name(g, e, name + "/equal");
    e.nodes.push_back(make_node("Equal", name + "/equal", {x, x}, {eq}));
    e.nodes.push_back(make_node("Not", name + "/not", {eq}, {np.output(0)}));
    return e;
  }
  const auto* p = find_attr(np, "detect_positive");
  const auto* m = find_attr(np, "detect_negative");
  std::vector<std::string> parts;
  for (const bool positive : {true, false}) {
    if (!(positive ? (!p || p->i() != 0) : (!m || m->i() != 0))) continue;
    const std::string inf = fresh_name(g, e, name + (positive ? "/pos_inf" : "/neg_inf"));
    Tensor t(DType::kF32, {});
    t.f32()[0] = positive ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    e.constants.emplace_back(inf, std::move(t));
    parts.push_back(fresh_name(g, e, inf + ".equal"));
    e.nodes.push_back(make_node("Equal", inf + ".equal", {x, inf}, {parts.back()}));
  }
  if (parts.empty()) {  // neither: all false
    const std::string f = fresh_name(g, e, name + "/false");
    Tensor t(DType::kBool, {});
    e.constants.emplace_back(f, std::move(t));
    const std::string eq = fresh_name(g, e, name + "/equal");
    e.nodes.push_back(make_node("Equal", name + "/equal", {x, x}, {eq}));
    e.nodes.push_back(make_node("And", name + "/and", {eq, f}, {np.output(0)}));
  } else if (parts.size() == 1) {
    e.nodes.back().set_output(0, np.output(0));
  } else {
    e.nodes.push_back(make_node("Or", name + "/or", parts, {np.output(0)}));
  }
  return e;
}

// MeanVarianceNormalization (ONNX's function body): (X - mean) / (sqrt(mean(X^2) - mean^2) + 1e-9)
// over `axes` (default 0, 2, 3).
Expansion mean_variance_norm(const Graph& g, const onnx::NodeProto& np, const std::string& name) {
  Expansion e;
  e.opset = 18;
  std::vector<int64_t> axes = {0, 2, 3};
  if (const auto* a = find_attr(np, "axes")) axes.assign(a->ints().begin(), a->ints().end());
  const std::string ax = fresh_name(g, e, name + "/axes");
  e.constants.emplace_back(ax, i64_tensor(axes));
  const std::string tiny = fresh_name(g, e, name + "/epsilon");
  Tensor t(DType::kF32, {});
  t.f32()[0] = 1e-9f;
  e.constants.emplace_back(tiny, std::move(t));
  const std::string& x = np.input(0);
  std::map<std::string, std::string> v;
  for (const char* k : {"mean", "sq", "mean_sq", "sq_mean", "var", "std", "std_eps", "dev"})
    v[k] = fresh_name(g, e, name + "/" + k);
  e.nodes.push_back(make_node("ReduceMean", name + "/mean", {x, ax}, {v["mean"]}));
  e.nodes.push_back(make_node("Mul", name + "/sq", {x, x}, {v["sq"]}));
  e.nodes.push_back(make_node("ReduceMean", name + "/mean_sq", {v["sq"], ax}, {v["mean_sq"]}));
  e.nodes.push_back(make_node("Mul", name + "/sq_mean", {v["mean"], v["mean"]}, {v["sq_mean"]}));
  e.nodes.push_back(make_node("Sub", name + "/var", {v["mean_sq"], v["sq_mean"]}, {v["var"]}));
  e.nodes.push_back(make_node("Sqrt", name + "/std", {v["var"]}, {v["std"]}));
  e.nodes.push_back(make_node("Add", name + "/std_eps", {v["std"], tiny}, {v["std_eps"]}));
  e.nodes.push_back(make_node("Sub", name + "/dev", {x, v["mean"]}, {v["dev"]}));
  e.nodes.push_back(make_node("Div", name + "/y", {v["dev"], v["std_eps"]}, {np.output(0)}));
  return e;
}

}  // namespace

bool is_expanded_op(const std::string& op) {
  return op == "SoftmaxCrossEntropyLoss" || op == "GlobalMaxPool" || op == "If" || op == "Loop" || op == "Scan" ||
         op == "Einsum" || op == "IsNaN" || op == "IsInf" || op == "MeanVarianceNormalization" || is_qlinear_op(op);
}

bool expanded_attr(const std::string& op, const std::string& attr, int64_t opset) {
  if (opset < 7 && (attr == "broadcast" || attr == "axis") && legacy_broadcast_op(op)) return true;
  if (op == "SoftmaxCrossEntropyLoss") return attr == "reduction" || attr == "ignore_index";
  if (op == "IsInf") return attr == "detect_positive" || attr == "detect_negative";
  if (op == "If") return attr == "then_branch" || attr == "else_branch";
  if (op == "Loop") return attr == "body";
  if (op == "Scan")
    return attr == "body" || attr == "num_scan_inputs" || attr == "scan_input_axes" ||
           attr == "scan_input_directions" || attr == "scan_output_axes" || attr == "scan_output_directions";
  if (op == "Einsum") return attr == "equation";
  if (op == "QLinearConv")  // onto ConvInteger
    return attr == "kernel_shape" || attr == "strides" || attr == "pads" || attr == "dilations" || attr == "group" ||
           attr == "auto_pad";
  return op == "MeanVarianceNormalization" && attr == "axes";
}

bool legacy_broadcast_op(const std::string& op) {
  static const std::set<std::string> ops = {"Add", "Sub", "Mul",   "Div",     "Pow", "And",
                                            "Or",  "Xor", "Equal", "Greater", "Less"};
  return ops.count(op) > 0;
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
  if (op == "Loop" && find_attr(np, "body_model")) return std::optional<Expansion>();  // the op Loop: as it is
  if (op == "Loop") {  // its trip count and condition may be absent (input 0 "")
    FUSERT_ASSIGN_OR_RETURN(Expansion e, loop_expanded(g, np, name, loc, opset));
    return std::optional<Expansion>(std::move(e));
  }
  const bool has_input = np.input_size() > 0 && !np.input(0).empty() && g.find_value(np.input(0)) != kNoValue;
  if (!has_input || np.output_size() == 0) return std::optional<Expansion>();  // map_node reports it
  if (is_1d_spatial(g, np)) {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, lift_1d(g, np, opset, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  if (opset < 7 && legacy_broadcast_op(op)) return legacy_broadcast(g, np, name, loc);
  if (op == "SoftmaxCrossEntropyLoss") return std::optional<Expansion>(softmax_cross_entropy(g, np, name));
  if (op == "If" && find_attr(np, "then_model")) return std::optional<Expansion>();  // the op If: as it is
  if (op == "If") {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, if_inlined(g, np, name, loc, opset));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "Scan") {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, scan_as_loop(g, np, name, loc, opset));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "QLinearConv" && qlinear_conv_direct(g, np)) return std::optional<Expansion>();  // the op QLinearConv
  if (is_qlinear_op(op)) {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, qlinear(g, np, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "Einsum") {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, einsum(g, np, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  const Value& x0 = g.value(g.find_value(np.input(0)));
  if (op == "GlobalMaxPool") {
    if (x0.shape.size() < 3)
      return error(StatusCode::kShapeMismatch)
             << loc.str() << ": input " << shape_str(x0.shape) << " must be [N, C, d1, ...] (rank >= 3)";
    return std::optional<Expansion>(global_max_pool(g, np, name));
  }
  if (op == "IsNaN" || op == "IsInf") {
    if (x0.dtype != DType::kF32)
      return error(StatusCode::kUnsupported) << loc.str() << ": input is " << dtype_name(x0.dtype) << " (f32)";
    return std::optional<Expansion>(is_nan_inf(g, np, name));
  }
  if (op == "MeanVarianceNormalization") return std::optional<Expansion>(mean_variance_norm(g, np, name));
  const bool stats = !output_at(np, 1).empty() || !output_at(np, 2).empty();
  if (op == "LayerNormalization" && stats) {
    FUSERT_ASSIGN_OR_RETURN(Expansion e, layer_norm_stats(g, np, name, loc));
    return std::optional<Expansion>(std::move(e));
  }
  if (op == "Pow" && np.input_size() == 2) {
    if (std::optional<Expansion> e = pow_mixed(g, np, name)) return e;
  }
  if (op == "Dropout" && !output_at(np, 1).empty()) return std::optional<Expansion>(dropout_mask(g, np, name));
  if ((op == "Softmax" || op == "LogSoftmax" || op == "Hardmax") && opset < 13) return legacy_softmax(g, np, name);
  return std::optional<Expansion>();
}

}  // namespace fusert::onnx_import
