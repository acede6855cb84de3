// Float64 models run in float32 (graph/onnx/onnx_f64.h).
#include "graph/onnx/onnx_f64.h"

namespace fusert::onnx_import {

namespace {

// The attribute of `np` that holds a target type, or nullptr.
bool is_type_attr(const onnx::NodeProto& np, const onnx::AttributeProto& a) {
  return (np.op_type() == "Cast" && a.name() == "to") || (np.op_type() == "EyeLike" && a.name() == "dtype");
}

// Rewrites (when `rewrite`) or finds float64 targets in `np` and its subgraphs.
bool visit(onnx::NodeProto* np, bool rewrite) {
  bool found = false;
  for (auto& a : *np->mutable_attribute()) {
    if (is_type_attr(*np, a) && a.i() == onnx::TensorProto::DOUBLE) {
      found = true;
      if (rewrite) a.set_i(onnx::TensorProto::FLOAT);
    }
    auto visit_graph = [&](onnx::GraphProto* g) {
      for (auto& in : *g->mutable_input()) {
        auto* t = in.mutable_type()->mutable_tensor_type();
        if (t->elem_type() == onnx::TensorProto::DOUBLE) {
          found = true;
          if (rewrite) t->set_elem_type(onnx::TensorProto::FLOAT);
        }
      }
      for (auto& n : *g->mutable_node()) found |= visit(&n, rewrite);
    };
    if (a.has_g()) visit_graph(a.mutable_g());
    for (auto& g : *a.mutable_graphs()) visit_graph(&g);
  }
  return found;
}

}  // namespace

bool names_f64(const onnx::NodeProto& np) {
  onnx::NodeProto copy = np;
  return visit(&copy, false);
}

onnx::NodeProto f64_as_f32(onnx::NodeProto np) {
  visit(&np, true);
  return np;
}

}  // namespace fusert::onnx_import
