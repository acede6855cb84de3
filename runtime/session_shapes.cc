// SessionImpl, models with symbolic dims: runs at any shape in range through the per-shape plan
// cache (runtime/shape_cache.h), and the inputs and outputs an application discovers.
#include <algorithm>
#include <chrono>

#include "graph/fusion/planner.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"
#include "kernels/cpu/cpu_kernels.h"
#include "runtime/memory_planner.h"
#include "runtime/session_impl.h"

namespace fusert {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// The graph outputs with the symbolic dim each dimension follows: the model is expanded again
// with one dim moved at a time; a dimension equal to that dim at both points is named after it.
Result<std::vector<SessionImpl::TensorInfo>> SessionImpl::describe_outputs(const ModelSpec& m) {
  std::vector<SessionImpl::TensorInfo> out;
  for (ValueId id : m.graph.outputs) {
    const Value& v = m.graph.value(id);
    SessionImpl::TensorInfo t{v.name, v.dtype, {}};
    for (int64_t d : v.shape) t.dims.push_back({d, {}, d, d});
    out.push_back(t);
  }
  DimValues joint = m.dim_values;  // every open dim at its probe
  for (const SymbolicDim& sd : m.dims) {
    if (sd.min == sd.max || (sd.open && sd.probe == 0)) continue;
    DimValues at = m.dim_values;
    at[sd.name] = sd.open ? sd.probe : (sd.opt != sd.max ? sd.max : sd.min);
    if (sd.open) joint[sd.name] = sd.probe;
    Result<ModelSpec> probed = instantiate_model(m, at);
    if (!probed.ok() && sd.open) continue;  // e.g. a height without its width: the joint move below
    FUSERT_RETURN_IF_ERROR(probed.status());
    const ModelSpec& moved = *probed;
    for (size_t k = 0; k < out.size(); ++k) {
      const Shape& s = moved.graph.value(moved.graph.outputs[k]).shape;
      for (size_t d = 0; d < s.size() && d < out[k].dims.size(); ++d) {
        SessionImpl::Dim& dim = out[k].dims[d];
        if (s[d] == dim.value) continue;
        if (dim.symbol.empty() && dim.value == sd.opt && s[d] == at[sd.name])
          dim = {dim.value, sd.name, sd.min, sd.max};
        else
          dim = {dim.value, "?", 0, 0};
      }
    }
  }
  if (joint == m.dim_values) return out;
  Result<ModelSpec> moved = instantiate_model(m, joint);
  for (size_t k = 0; moved.ok() && k < out.size(); ++k) {  // what follows the open dims only together
    const Shape& s = moved->graph.value(moved->graph.outputs[k]).shape;
    for (size_t d = 0; d < s.size() && d < out[k].dims.size(); ++d) {
      if (s[d] != out[k].dims[d].value && out[k].dims[d].symbol.empty())
        out[k].dims[d] = {out[k].dims[d].value, "?", 0, 0};
    }
  }
  return out;
}

// A model with symbolic dims: the opt point runs on the session's own plan; any other shape on
// its cached ShapeInstance, built on first use.
Result<TensorMap> SessionImpl::run_instance(const DimValues& dims, const TensorMap& inputs, RunInfo* info) {
  if (dims == model_.dim_values) {
    {
      std::lock_guard<std::mutex> lock(*run_mu_);
      ++stats_.shape_cache_hits;
    }
    return backend_->run(inputs, info);
  }
  bool hit = false;
  FUSERT_ASSIGN_OR_RETURN(std::shared_ptr<ShapeInstance> inst,
                          shapes_->get(
                              dims, [this](const DimValues& d) { return build_instance(d); }, &hit));
  {
    std::lock_guard<std::mutex> lock(*run_mu_);
    if (hit) {
      ++stats_.shape_cache_hits;
    } else {
      ++stats_.shape_cache_misses;
      stats_.shape_replans += inst->replanned ? 1 : 0;
      stats_.shape_build_ms_last = inst->build_ms;
      stats_.shape_build_ms_max = std::max(stats_.shape_build_ms_max, inst->build_ms);
      stats_.shape_build_ms_total += inst->build_ms;
    }
  }
  return inst->backend->run(inputs, info);
}

// The canonical graph at `dims`: input shapes and symbolic constants from the model expanded at
// those values, every node's shape inferred again, every tensor within max_tensor_elements.
Result<Graph> SessionImpl::graph_at(const DimValues& dims) const {
  FUSERT_ASSIGN_OR_RETURN(ModelSpec at, instantiate_model(loaded_, dims));
  Graph g = model_.graph;                // weights shared, not copied
  std::map<std::string, Tensor> consts;  // symbolic constants at `dims`, then what was folded from them
  for (const Value& v : at.graph.values) {
    if (v.symbolic) consts[v.name] = v.data;
  }
  FUSERT_RETURN_IF_ERROR(refold_symbolic(g, &consts));
  for (Value& v : g.values) {
    if (v.is_graph_input) {
      const ValueId src = at.graph.find_value(v.name);
      FUSERT_CHECK(src != kNoValue) << "input " << v.name << " missing at " << dims_str(dims);
      v.shape = at.graph.value(src).shape;
    } else if (v.symbolic) {
      auto it = consts.find(v.name);
      if (it == consts.end()) {
        return error(StatusCode::kInternal)
               << model_.path << ": symbolic constant '" << v.name << "' has no value at " << dims_str(dims);
      }
      v.data = it->second;
      v.shape = v.data.shape();
    }
  }
  Status inferred = infer_shapes(g);
  if (inferred.ok()) inferred = verify_graph(g);
  if (!inferred.ok()) {
    return error(inferred.code()) << model_.path << " at " << dims_str(dims) << ": " << inferred.message();
  }
  for (const Value& v : g.values) {
    int64_t n = 0;
    if (v.shape_known && (!checked_numel(v.shape, &n) || n > options_.max_tensor_elements)) {
      return error(StatusCode::kInvalidArgument)
             << "tensor '" << v.name << "' " << shape_str(v.shape) << " at " << dims_str(dims)
             << " is larger than SessionOptions::max_tensor_elements (" << options_.max_tensor_elements << ")";
    }
  }
  return g;
}

// A run whose inputs bind an open dim to 0: when every output is empty at those dims (their
// shapes from the model at them), the empty outputs; nothing runs. Otherwise an error (the caller
// reports bind_dims's, which names the input).
Result<TensorMap> SessionImpl::empty_outputs(const TensorMap& inputs) const {
  FUSERT_ASSIGN_OR_RETURN(DimValues dims, bind_dims(model_, inputs, true));
  bool zero = false;
  for (const auto& [name, v] : dims) zero |= v == 0;
  if (!zero) return error(StatusCode::kShapeMismatch) << "no dim is 0";
  FUSERT_ASSIGN_OR_RETURN(std::vector<Shape> shapes, output_shapes_at(dims));
  TensorMap out;
  for (size_t k = 0; k < shapes.size(); ++k) {
    const Value& v = model_.graph.value(model_.graph.outputs[k]);
    if (shape_numel(shapes[k]) != 0) return error(StatusCode::kShapeMismatch) << "'" << v.name << "' is not empty";
    out[v.name] = Tensor(v.dtype, shapes[k]);
  }
  return out;
}

Result<std::vector<Shape>> SessionImpl::output_shapes_at(const DimValues& dims) const {
  std::vector<Shape> out;
  if (dims == model_.dim_values || !shapes_) {
    for (ValueId o : model_.graph.outputs) out.push_back(model_.graph.value(o).shape);
    return out;
  }
  FUSERT_ASSIGN_OR_RETURN(Graph g, graph_at(dims));
  for (ValueId o : g.outputs) out.push_back(g.value(o).shape);
  return out;
}

// The graph at `dims` (graph_at), then this shape's lowering of the session's
// fusion plan (re-planned at this shape only if the backend cannot lower a group there), memory
// plan and executor.
Result<std::shared_ptr<ShapeInstance>> SessionImpl::build_instance(const DimValues& dims) const {
  auto t0 = std::chrono::steady_clock::now();
  cpu::ThreadScope threads(options_.threads);
  auto inst = std::make_shared<ShapeInstance>();
  inst->dims = dims;
  FUSERT_ASSIGN_OR_RETURN(inst->graph, graph_at(dims));
  Graph& g = inst->graph;
  FUSERT_ASSIGN_OR_RETURN(inst->backend, create_backend(options_));
  FusionOptions fopt = fusion_options_;
  FUSERT_RETURN_IF_ERROR(configure_planner(*inst->backend, options_, &fopt));
  inst->fusion = fusion_;
  Result<std::vector<Step>> steps = error(StatusCode::kUnsupported) << "plan does not rebind";
  if (rebind_plan(g, &inst->fusion).ok()) steps = inst->backend->lower(g, inst->fusion);
  if (!steps.ok()) {  // e.g. a library primitive refused at this shape: plan this shape on its own
    FUSERT_ASSIGN_OR_RETURN(inst->fusion, plan_fusion(g, fopt));
    inst->replanned = true;
    steps = inst->backend->lower(g, inst->fusion);
  }
  FUSERT_RETURN_IF_ERROR(steps.status());
  inst->plan.steps = std::move(*steps);
  plan_memory(g, inst->plan);
  if (static_cast<int64_t>(inst->plan.arena_bytes) > options_.max_activation_bytes) {
    return error(StatusCode::kInvalidArgument)
           << model_.path << " at " << dims_str(dims) << ": the activations need " << inst->plan.arena_bytes
           << " bytes, more than SessionOptions::max_activation_bytes (" << options_.max_activation_bytes << ")";
  }
  FUSERT_RETURN_IF_ERROR(inst->backend->prepare(g, inst->plan));
  inst->build_ms = ms_since(t0);
  return inst;
}

std::vector<SessionImpl::TensorInfo> SessionImpl::inputs() const {
  std::vector<TensorInfo> out;
  const Graph& g = model_.graph;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Value& v = g.value(g.inputs[k]);
    TensorInfo t{v.name, v.dtype, {}};
    for (size_t d = 0; d < v.shape.size(); ++d) {
      Dim dim{v.shape[d], {}, v.shape[d], v.shape[d]};
      const std::string sym = k < model_.input_dims.size() ? model_.input_dims[k][d] : std::string();
      for (const SymbolicDim& sd : model_.dims) {
        if (sd.name == sym) dim = Dim{v.shape[d], sym, sd.min, sd.max};
      }
      t.dims.push_back(dim);
    }
    out.push_back(t);
  }
  return out;
}

std::vector<SessionImpl::TensorInfo> SessionImpl::outputs() const { return output_info_; }

}  // namespace fusert
