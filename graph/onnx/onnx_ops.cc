// ONNX op types and attributes onto the op table. Most ONNX ops are fusert ops of the same name
// and attributes (the table follows opset 17: direct_ops); the others, and the opsets and
// inputs that change what a node becomes, have rules (onnx_rules.h: one row per op and opset
// range, saying which attributes it reads itself), which map_node applies in three stages: fold
// to a constant, rewrite inputs and op, set attributes on the built node.
#include "graph/onnx/onnx_ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_rules.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert::onnx_import {

// ONNX op types imported as the fusert op of the same name: every row of the op table
// (graph/ops.def) but the ones its FUSERT_INTERNAL_OP list names.
const std::set<std::string>& direct_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> names;
    for (int k = 0; k < static_cast<int>(OpKind::kCount); ++k) names.insert(op_info(static_cast<OpKind>(k)).name);
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc)
#define FUSERT_INTERNAL_OP(name) names.erase(#name);
#include "graph/ops.def"
#undef FUSERT_INTERNAL_OP
#undef FUSERT_OP
    return names;
  }();
  return ops;
}

namespace {

Result<AttrValue> convert_attr(const onnx::AttributeProto& a, const AttrSchema& s, const SourceLoc& loc) {
  AttrValue v;
  v.type = s.type;
  const auto mismatch = [&]() -> Status {
    return error(StatusCode::kUnsupported)
           << loc.str() << ": attribute '" << a.name() << "' is not of type " << attr_type_name(s.type);
  };
  switch (s.type) {
    case AttrType::kInt:
      if (a.type() != onnx::AttributeProto::INT) return mismatch();
      v.i = a.i();
      break;
    case AttrType::kFloat:
      if (a.type() == onnx::AttributeProto::FLOAT) {
        v.f = a.f();
      } else if (a.type() == onnx::AttributeProto::INT) {
        v.f = static_cast<double>(a.i());
      } else {
        return mismatch();
      }
      break;
    case AttrType::kInts:
      if (a.type() != onnx::AttributeProto::INTS) return mismatch();
      v.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case AttrType::kFloats:
      if (a.type() != onnx::AttributeProto::FLOATS) return mismatch();
      v.floats.assign(a.floats().begin(), a.floats().end());
      break;
    case AttrType::kString:
      if (a.type() != onnx::AttributeProto::STRING) return mismatch();
      v.s = a.s();
      break;
  }
  return v;
}

}  // namespace

Status map_node(Graph& g, const onnx::NodeProto& np, int64_t opset, const std::string& name, const SourceLoc& loc,
                const std::string& base_dir, Mapped* out) {
  const std::string& op = np.op_type();
  std::vector<ValueId> ins;
  for (const std::string& in : np.input()) {
    if (in.empty()) {
      ins.push_back(kNoValue);
      continue;
    }
    const ValueId id = g.find_value(in);
    if (id == kNoValue || !g.value(id).shape_known) {
      return error(StatusCode::kParseError) << loc.str() << ": input '" << in << "' is not computed before this node";
    }
    ins.push_back(id);
  }
  while (!ins.empty() && ins.back() == kNoValue) ins.pop_back();
  std::vector<std::string> outs(np.output().begin(), np.output().end());
  while (!outs.empty() && outs.back().empty()) outs.pop_back();
  if (outs.empty()) return error(StatusCode::kParseError) << loc.str() << ": no outputs";

  // Every op but Loop (M) and Scan-8 (sequence_lens) needs its input 0, and a variadic op takes
  // no empty input: the rules and shape functions read them.
  const bool variadic = op == "Concat" || op == "Sum" || op == "Mean" || op == "Max" || op == "Min";
  const bool optional_first = op == "Loop" || op == "Scan";
  for (size_t k = 0; k < ins.size(); ++k) {
    if (ins[k] == kNoValue && ((k == 0 && !optional_first) || variadic))
      return error(StatusCode::kInvalidArgument) << loc.str() << ": input " << k << " is empty (\"\"), and " << op
                                                 << (k == 0 ? " needs its first input" : " takes no empty input");
  }
  RuleCtx c(g, np, opset, name, loc, base_dir, outs.size(), ins);
  const std::vector<const OnnxRule*> rules = rules_for(op, opset);
  for (const OnnxRule* r : rules) {
    if (!r->fold) continue;
    FUSERT_RETURN_IF_ERROR(r->fold(c));
    if (c.folded) {
      out->constant = std::move(c.constant);
      return Status();
    }
  }
  if (ins.empty()) return error(StatusCode::kParseError) << loc.str() << ": " << op << " has no inputs";
  for (const OnnxRule* r : rules) {
    if (r->rewrite && !c.done) FUSERT_RETURN_IF_ERROR(r->rewrite(c));
  }
  const std::string& fop = c.fop;
  Node& n = out->node;
  if (!find_op(fop, &n.op)) return error(StatusCode::kUnsupported) << loc.str() << ": op " << op;
  const OpInfo& info = op_info(n.op);
  for (auto& [k, v] : c.preset) n.attrs[k] = v;  // attributes a rule took from inputs
  if (static_cast<int>(ins.size()) < info.min_inputs || static_cast<int>(ins.size()) > info.max_inputs) {
    return error(StatusCode::kUnsupported) << loc.str() << ": " << ins.size() << " inputs (fusert's " << info.name
                                           << " takes " << info.min_inputs << ".." << info.max_inputs << ")";
  }
  if (static_cast<int>(outs.size()) > info.max_outputs) {
    return error(StatusCode::kUnsupported) << loc.str() << ": " << outs.size() << " outputs (fusert's " << info.name
                                           << " computes " << info.max_outputs << ")";
  }
  n.inputs = ins;
  for (size_t k = 0; k < outs.size(); ++k) {  // an output left unnamed before a named one: a name of its own
    std::string o = outs[k];
    for (int j = 0; o.empty() || (outs[k].empty() && g.find_value(o) != kNoValue); ++j)
      o = name + ".output" + std::to_string(k) + (j ? "_" + std::to_string(j) : "");
    n.outputs.push_back(g.add_value(o));
  }
  for (const auto& a : np.attribute()) {
    if (consumed_attr(op, a.name(), opset)) continue;
    const AttrSchema* s = info.find_attr(a.name());
    if (!s) return error(StatusCode::kUnsupported) << loc.str() << ": attribute '" << a.name() << "'";
    FUSERT_ASSIGN_OR_RETURN(n.attrs[a.name()], convert_attr(a, *s, loc));
  }
  for (const OnnxRule* r : rules) {
    if (r->attrs) FUSERT_RETURN_IF_ERROR(r->attrs(c, &n));
  }
  for (const AttrSchema& s : info.attrs) {
    if (n.attrs.count(s.name)) continue;
    if (s.required) return error(StatusCode::kParseError) << loc.str() << ": attribute '" << s.name << "' is required";
    n.attrs[s.name] = s.default_value;
  }
  return Status();
}

}  // namespace fusert::onnx_import
