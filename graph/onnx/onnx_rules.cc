// The rule table (onnx_rules.h): the rows of the three rule files, looked up by op and opset.
#include "graph/onnx/onnx_rules.h"

#include <set>

#include "graph/onnx/onnx_folded.h"
#include "graph/onnx/onnx_ops.h"

namespace fusert::onnx_import {

namespace {

const std::vector<OnnxRule>& table() {
  static const std::vector<OnnxRule> rules = [] {
    std::vector<OnnxRule> all;
    for (auto rows : {fold_rules(), shape_rules(), compat_rules()}) all.insert(all.end(), rows.begin(), rows.end());
    return all;
  }();
  return rules;
}

bool names(const std::string& pattern, const std::string& a) {
  if (!pattern.empty() && pattern.back() == '*')
    return a.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0;
  return a == pattern;
}

}  // namespace

std::vector<const OnnxRule*> rules_for(const std::string& op, int64_t opset) {
  std::vector<const OnnxRule*> out;
  for (const OnnxRule& r : table())
    if (op == r.op && r.holds_at(opset)) out.push_back(&r);
  return out;
}

const std::set<std::string>& rewritten_ops() {
  static const std::set<std::string> ops = [] {
    std::set<std::string> s;
    for (const OnnxRule& r : table())
      if (!direct_ops().count(r.op)) s.insert(r.op);
    return s;
  }();
  return ops;
}

bool consumed_attr(const std::string& op, const std::string& a, int64_t opset) {
  if (opset < 6 && a == "consumed_inputs") return true;  // opsets 1-5: an optimisation hint
  for (const OnnxRule* r : rules_for(op, opset))
    for (const std::string& c : r->consumes)
      if (names(c, a)) return true;
  return false;
}

ValueId add_rule_const(Graph& g, const std::string& name, Tensor data, const SourceLoc& loc) {
  std::string n = name;
  for (int k = 1; g.find_value(n) != kNoValue; ++k) n = name + "_" + std::to_string(k);
  Value& v = g.value(g.add_value(n));
  v.dtype = data.dtype();
  v.shape = data.shape();
  v.shape_known = true;
  v.is_initializer = v.is_constant = true;
  v.data = std::move(data);
  v.loc = loc;
  return g.find_value(n);
}

std::vector<int64_t> ints_attr(const onnx::NodeProto& np, const std::string& name) {
  const onnx::AttributeProto* a = find_attr(np, name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}

}  // namespace fusert::onnx_import
