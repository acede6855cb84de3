// Which ONNX op types and attributes the import supports (graph/onnx/onnx_ops.h, check_supported):
// one error listing all that a model (and its If branches) uses and fusert does not have.
#include <map>
#include <sstream>

#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_ops.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert::onnx_import {

namespace {

using Findings = std::map<std::string, std::pair<int, std::vector<std::string>>>;

// The unsupported op types and attributes of `g`'s nodes and of the subgraphs of its If nodes
// (named "<If node>/<node>").
void find_unsupported(const onnx::GraphProto& g, int64_t opset, const std::string& scope, bool f64, Findings* ops_out,
                      Findings* attrs_out) {
  Findings &ops = *ops_out, &attrs = *attrs_out;
  // CastLike takes its target from input 1's dtype; an initializer of float16 or double decodes
  // to f32, so that dtype is read here, before decoding.
  std::map<std::string, int> init_types;
  for (const auto& t : g.initializer()) init_types[t.name()] = t.data_type();
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& np = g.node(i);
    const std::string name = scope + (np.name().empty() ? "#" + std::to_string(i) : np.name());
    const bool onnx_domain = np.domain().empty() || np.domain() == "ai.onnx";
    const std::string op = onnx_domain ? np.op_type() : np.domain() + "." + np.op_type();
    if (op == "CastLike" && np.input_size() > 1 && init_types.count(np.input(1))) {
      const int t = init_types[np.input(1)];
      if (t != onnx::TensorProto::FLOAT && t != onnx::TensorProto::INT32 && t != onnx::TensorProto::INT64 &&
          t != onnx::TensorProto::BOOL && !(f64 && t == onnx::TensorProto::DOUBLE)) {
        auto& e = ops[std::string("CastLike to ") + elem_type_name(t)];
        if (e.first++ < 3) e.second.push_back(name);
        continue;
      }
    }
    OpKind kind;
    if (!onnx_domain || (!direct_ops().count(op) && !rewritten_ops().count(op) && !is_expanded_op(op)) ||
        (direct_ops().count(op) && !find_op(op, &kind))) {
      auto& e = ops[op];
      if (e.first++ < 3) e.second.push_back(name);
      continue;
    }
    // Scatter (opset 9-10) has ScatterElements' attributes.
    const bool alias = op == "Scatter" && find_op("ScatterElements", &kind);
    const OpInfo* info = direct_ops().count(op) || alias ? &op_info(kind) : nullptr;
    for (const auto& a : np.attribute()) {
      if (consumed_attr(op, a.name(), opset) || expanded_attr(op, a.name(), opset) ||
          (info && info->find_attr(a.name())))
        continue;
      auto& e = attrs[op + "." + a.name()];
      if (e.first++ < 3) e.second.push_back(name);
    }
    if (op != "If" && op != "Loop") continue;
    for (const auto& a : np.attribute())
      if (a.has_g()) find_unsupported(a.g(), opset, name + "/", f64, ops_out, attrs_out);
  }
}

}  // namespace

Status check_supported(const onnx::GraphProto& g, int64_t opset, const std::string& path, bool f64_as_f32) {
  Findings ops, attrs;
  find_unsupported(g, opset, "", f64_as_f32, &ops, &attrs);
  if (ops.empty() && attrs.empty()) return Status();
  std::ostringstream os;
  os << path << ": unsupported by fusert:";
  auto list = [&os](const char* what, const auto& m) {
    if (m.empty()) return;
    os << "\n  " << what << ":";
    for (const auto& [k, e] : m) {
      os << "\n    " << k << " x" << e.first << " (";
      for (size_t j = 0; j < e.second.size(); ++j) os << (j ? ", " : "") << e.second[j];
      os << (e.first > 3 ? ", ..." : "") << ")";
    }
  };
  list("op types", ops);
  list("attributes", attrs);
  return error(StatusCode::kUnsupported) << os.str();
}

}  // namespace fusert::onnx_import
