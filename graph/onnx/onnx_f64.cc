// Float64 models run in float32 (graph/onnx/onnx_f64.h).
#include "graph/onnx/onnx_f64.h"

namespace fusert::onnx_import {

namespace {

// Whether attribute `a` of `np` holds a target type.
bool is_type_attr(const onnx::NodeProto& np, const onnx::AttributeProto& a) {
  return (np.op_type() == "Cast" && a.name() == "to") || (np.op_type() == "EyeLike" && a.name() == "dtype");
}

}  // namespace

bool f64_as_f32(onnx::NodeProto* np) {
  bool found = false;
  for (auto& a : *np->mutable_attribute()) {
    if (is_type_attr(*np, a) && a.i() == onnx::TensorProto::DOUBLE) {
      found = true;
      a.set_i(onnx::TensorProto::FLOAT);
    }
    auto visit_graph = [&](onnx::GraphProto* g) {
      for (auto& in : *g->mutable_input()) {
        auto* t = in.mutable_type()->mutable_tensor_type();
        if (t->elem_type() == onnx::TensorProto::DOUBLE) {
          found = true;
          t->set_elem_type(onnx::TensorProto::FLOAT);
        }
      }
      for (auto& n : *g->mutable_node()) found |= f64_as_f32(&n);
    };
    if (a.has_g()) visit_graph(a.mutable_g());
    for (auto& g : *a.mutable_graphs()) visit_graph(&g);
  }
  return found;
}

}  // namespace fusert::onnx_import
