// SessionImpl: model + weights -> lowered plan -> executor.
#include "runtime/session_impl.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include <Eigen/Core>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "graph/fusion/cost_model.h"
#include "graph/fusion/explain.h"
#include "graph/fusion/planner.h"
#include "graph/onnx/onnx_import.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"
#include "kernels/cpu/cpu_kernels.h"
#include "runtime/cpu/lower_cpu.h"
#include "runtime/executor.h"
#include "runtime/memory_planner.h"
#include "runtime/weights.h"

namespace fusert {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// Seeds every initializer the model file does not hold (an ONNX file's are constants already).
std::string seed_weights(Graph& g, uint64_t seed) {
  bool any = false, none = true;
  for (ValueId id : g.initializers()) {
    any |= !g.value(id).is_constant;
    none = false;
  }
  bind_seeded_weights(g, seed);
  if (none) return "none (the model has no initializers)";
  return any ? "seeded (seed " + std::to_string(seed) + ")" : "the model file's own";
}

Status bind_weights(ModelSpec& m, const SessionOptions& o, std::string* source) {
  Graph& g = m.graph;
  std::string path = o.weights.empty() ? m.weights_path : o.weights;
  if (o.seeded || path.empty()) {
    *source = seed_weights(g, o.seed);
    return Status();
  }
  if (o.weights.empty() && !file_exists(path)) {
    return error(StatusCode::kNotFound) << path << ": weights file of model '" << g.name << "' not found"
                                        << (m.weights_fetch.empty() ? std::string()
                                                                    : "; create it with: " + m.weights_fetch)
                                        << " (or pass --seeded to run with seeded weights)";
  }
  FUSERT_RETURN_IF_ERROR(bind_weights_from_file(g, path, m.weights_ignore));
  *source = path;
  return Status();
}

// The untrusted-size limits of SessionOptions, from declared and inferred shapes and the
// weights file's size, before any weight is read or seeded and before the arena is sized.
Status check_limit_options(const SessionOptions& o) {
  if (o.max_tensor_elements <= 0 || o.max_tensor_elements > kMaxTensorElements) {
    return error(StatusCode::kInvalidArgument) << "SessionOptions::max_tensor_elements must be in 1.."
                                               << kMaxTensorElements << ", got " << o.max_tensor_elements;
  }
  if (o.max_weight_bytes < 0 || o.max_activation_bytes < 0) {
    return error(StatusCode::kInvalidArgument)
           << "SessionOptions::max_weight_bytes and max_activation_bytes must be >= 0";
  }
  return Status();
}

Status check_size_limits(const ModelSpec& m, const SessionOptions& o, const std::string& model_path) {
  const Graph& g = m.graph;
  int64_t weight_bytes = 0;
  for (const Value& v : g.values) {
    if (!v.shape_known) continue;
    int64_t n = 0;
    if (!checked_numel(v.shape, &n) || n > o.max_tensor_elements) {
      return error(StatusCode::kInvalidArgument)
             << v.loc.str() << ": tensor '" << v.name << "' " << shape_str(v.shape) << " has " << shape_numel(v.shape)
             << " elements, more than SessionOptions::max_tensor_elements (" << o.max_tensor_elements << ")";
    }
    if (v.is_initializer) {
      const int64_t bytes = n * static_cast<int64_t>(dtype_size(v.dtype));
      weight_bytes = bytes > o.max_weight_bytes - weight_bytes ? o.max_weight_bytes + 1 : weight_bytes + bytes;
      if (weight_bytes > o.max_weight_bytes) {
        return error(StatusCode::kInvalidArgument)
               << model_path << ": the weights and constants declared up to '" << v.name
               << "' need more than SessionOptions::max_weight_bytes (" << o.max_weight_bytes << " bytes)";
      }
    }
  }
  const std::string path = o.seeded ? std::string() : o.weights.empty() ? m.weights_path : o.weights;
  std::error_code ec;
  const auto file_bytes = path.empty() ? 0 : std::filesystem::file_size(path, ec);
  if (!path.empty() && !ec && file_bytes > static_cast<uintmax_t>(o.max_weight_bytes)) {
    return error(StatusCode::kInvalidArgument)
           << path << ": weights file of " << file_bytes << " bytes, more than SessionOptions::max_weight_bytes ("
           << o.max_weight_bytes << ")";
  }
  return Status();
}

// Symbolic dims: every tensor of the model at the dims' max values (the loader inferred its
// shapes) within max_tensor_elements, so no run in range is refused for size later.
Status check_dim_limits(const ModelSpec& m, const SessionOptions& o) {
  DimValues at;
  for (const SymbolicDim& d : m.dims) at[d.name] = d.open ? d.opt : d.max;  // an open dim: checked per shape at run()
  FUSERT_ASSIGN_OR_RETURN(ModelSpec big, instantiate_model(m, at));
  for (const Value& v : big.graph.values) {
    int64_t n = 0;
    if (v.shape_known && (!checked_numel(v.shape, &n) || n > o.max_tensor_elements)) {
      return error(StatusCode::kInvalidArgument)
             << v.loc.str() << ": tensor '" << v.name << "' " << shape_str(v.shape) << " at " << dims_str(at)
             << " has more elements than SessionOptions::max_tensor_elements (" << o.max_tensor_elements
             << "); lower the dims' max";
    }
  }
  return Status();
}

// FUSERT_LOG=passes,fusion prints the canonicalisation log and the plan with every refusal.
void log_plan(const SessionImpl& s) {
  const char* env = std::getenv("FUSERT_LOG");
  if (!env) return;
  std::string log = env;
  if (log.find("passes") != std::string::npos) {
    for (const std::string& line : s.stats().pass_log) std::fprintf(stderr, "[passes] %s\n", line.c_str());
  }
  if (log.find("fusion") != std::string::npos) std::fputs(explain_plan(s.graph(), s.fusion_plan()).c_str(), stderr);
}

}  // namespace

Result<std::unique_ptr<SessionImpl>> SessionImpl::load(const std::string& model_path, const SessionOptions& options) {
  try {
    return load_impl(model_path, options);
  } catch (const std::bad_alloc&) {
    return error(StatusCode::kIoError) << model_path
                                       << ": out of memory while loading (weights or plan too large for this machine)";
  }
}

namespace {

// What the backend measured while lowering (CUDA registers and spills), onto the plan's groups
// for --explain.
void record_measurements(const Backend& backend, FusionPlan* plan) {
  const auto m = backend.measurements();
  for (FusionGroup& grp : plan->groups) {
    auto it = m.find(grp.id);
    if (it == m.end()) continue;
    grp.registers_measured = it->second.registers;
    grp.spill_bytes = it->second.spill_bytes;
  }
}

}  // namespace

namespace {

// The options every session checks before it reads a model; the fusion mode into *fopt.
Status check_options(const SessionOptions& options, FusionOptions* fopt) {
  std::string why;
  if (!parse_fusion_mode(options.fusion, fopt, &why)) return error(StatusCode::kInvalidArgument) << "--fusion: " << why;
  Roofline plan_roofline;
  if (!options.plan_for.empty() && !planner_roofline(options.plan_for, &plan_roofline)) {
    return error(StatusCode::kInvalidArgument)
           << "unknown plan backend '" << options.plan_for << "' (" << backend_list() << ")";
  }
  if (options.threads < 0 || options.threads > 1024)
    return error(StatusCode::kInvalidArgument) << "threads must be in 0..1024 (0: all cores), got " << options.threads;
  return check_limit_options(options);
}

Result<ModelSpec> read_model(const std::string& model_path, const SessionOptions& options) {
  if (is_onnx_path(model_path)) {
    std::vector<SymbolicDim> dims;
    for (const auto& [name, r] : options.dim_ranges) dims.push_back(declared_dim(name, r.min, r.max, r.opt));
    return load_onnx(model_path, options.input_shapes, dims, /*open_dims=*/true, options.f64_as_f32);
  }
  if (!options.dim_ranges.empty()) {
    return error(StatusCode::kInvalidArgument) << model_path << ": SessionOptions::dim_ranges (--dim) is for ONNX "
                                               << "models; a YAML model declares its symbolic dims in 'dims:'";
  }
  if (!options.input_shapes.empty()) {
    return error(StatusCode::kInvalidArgument)
           << model_path << ": SessionOptions::input_shapes (--shape) is for ONNX models; a YAML model declares "
           << "its input shapes, and a symbolic batch takes --batch or the input's own shape";
  }
  return load_model(model_path);
}

}  // namespace

Result<std::unique_ptr<SessionImpl>> SessionImpl::load_impl(const std::string& model_path,
                                                            const SessionOptions& options) {
  FusionOptions fopt;
  FUSERT_RETURN_IF_ERROR(check_options(options, &fopt));
  {  // Without a device, fail before reading the model unless only the plan is wanted (plan_only:
     // the CUDA plan with register counts can be shown on a machine without a GPU).
    FUSERT_ASSIGN_OR_RETURN(std::unique_ptr<Backend> probe, create_backend(options));
    if (!options.plan_only) FUSERT_RETURN_IF_ERROR(probe->available());
  }
  auto t0 = std::chrono::steady_clock::now();
  cpu::ThreadScope threads(options.threads);  // weight binding and folding use the session's count too
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, read_model(model_path, options));
  if (has_stages(spec)) return load_staged(std::move(spec), options, ms_since(t0));
  return from_spec(std::move(spec), options, fopt, ms_since(t0), /*stage=*/false);
}

Result<std::unique_ptr<SessionImpl>> SessionImpl::open_spec(ModelSpec spec, const SessionOptions& options) {
  FusionOptions fopt;
  FUSERT_RETURN_IF_ERROR(check_options(options, &fopt));
  if (has_stages(spec)) return load_staged(std::move(spec), options, 0);
  return from_spec(std::move(spec), options, fopt, 0, /*stage=*/false);
}

// The loaded model `spec` planned, lowered and (unless plan_only) ready to run. A stage of a
// staged model (runtime/staged.h) skips what the whole model reports (its outputs' dims).
Result<std::unique_ptr<SessionImpl>> SessionImpl::from_spec(ModelSpec spec, const SessionOptions& options,
                                                            FusionOptions fopt, double import_ms, bool stage) {
  std::unique_ptr<SessionImpl> s(new SessionImpl());
  auto t0 = std::chrono::steady_clock::now();
  cpu::ThreadScope threads(options.threads);
  s->options_ = options;
  FUSERT_ASSIGN_OR_RETURN(s->backend_, create_backend(options));
  s->model_ = std::move(spec);
  const std::string& model_path = s->model_.path;
  if (!s->model_.dims.empty()) {
    if (options.shape_cache_size < 1) {
      return error(StatusCode::kInvalidArgument)
             << "SessionOptions::shape_cache_size must be >= 1, got " << options.shape_cache_size;
    }
    s->loaded_ = s->model_;  // unbound: weights hold no data yet, constants are small
    s->shapes_ = std::make_unique<ShapeCache>(static_cast<size_t>(options.shape_cache_size));
    if (!stage) FUSERT_RETURN_IF_ERROR(check_dim_limits(s->model_, options));
  }
  if (!stage) {
    FUSERT_ASSIGN_OR_RETURN(s->output_info_, SessionImpl::describe_outputs(s->model_));
  }
  FUSERT_RETURN_IF_ERROR(check_size_limits(s->model_, options, model_path));
  FUSERT_RETURN_IF_ERROR(bind_weights(s->model_, options, &s->stats_.weights_source));
  s->stats_.load_ms = import_ms + ms_since(t0);
  static std::once_flag eigen_once;  // Eigen's static cache sizes, before any concurrent GEMM
  std::call_once(eigen_once, [] { Eigen::initParallel(); });
  if (options.profile_guided && !fopt.enabled.empty()) {
    FUSERT_ASSIGN_OR_RETURN(fopt.profile_ms, s->profile_unfused());
  }
  FUSERT_RETURN_IF_ERROR(s->plan_model(fopt));
  if (!options.plan_only) FUSERT_RETURN_IF_ERROR(s->init_device());
  return s;
}

// Canonicalises the bound graph, plans fusion, lowers it and plans memory.
Status SessionImpl::plan_model(FusionOptions fopt) {
  SessionImpl* s = this;
  const SessionOptions& options = options_;
  auto t1 = std::chrono::steady_clock::now();
  Graph& g = s->model_.graph;
  if (options.fusion != "raw") {
    FUSERT_ASSIGN_OR_RETURN(s->stats_.pass_log, run_canonicalize(g, false));
  } else {  // unfused still folds constant subgraphs (e.g. integer shape arithmetic)
    PassManager pm(false);
    pm.add(make_constant_folding_pass()).add(make_dead_code_pass());
    FUSERT_RETURN_IF_ERROR(pm.run(g).status());
    s->stats_.pass_log = pm.log_lines();
  }
  s->stats_.canonicalize_ms = ms_since(t1);
  s->fusion_options_ = fopt;
  FUSERT_RETURN_IF_ERROR(configure_planner(*s->backend_, options, &fopt));
  FUSERT_ASSIGN_OR_RETURN(s->fusion_, plan_fusion(g, fopt));
  FUSERT_ASSIGN_OR_RETURN(s->plan_.steps, s->backend_->lower(g, s->fusion_));
  record_measurements(*s->backend_, &s->fusion_);
  plan_memory(g, s->plan_);
  if (static_cast<int64_t>(s->plan_.arena_bytes) > options.max_activation_bytes) {
    return error(StatusCode::kInvalidArgument)
           << s->model_.path << ": the activations need " << s->plan_.arena_bytes
           << " bytes, more than SessionOptions::max_activation_bytes (" << options.max_activation_bytes << ")";
  }
  s->stats_.plan_ms = ms_since(t1);
  s->stats_.fusion_plan_ms = s->fusion_.plan_ms;
  log_plan(*s);
  s->stats_.nodes = static_cast<int64_t>(g.nodes.size());
  s->stats_.kernels = 0;
  for (const Step& st : s->plan_.steps) s->stats_.kernels += st.alias_of == kNoValue ? 1 : 0;
  s->stats_.intermediate_bytes = static_cast<int64_t>(s->plan_.intermediate_bytes);
  s->stats_.peak_activation_bytes = static_cast<int64_t>(s->plan_.arena_bytes);
  s->stats_.naive_activation_bytes = static_cast<int64_t>(s->plan_.naive_activation_bytes);
  for (const Value& v : g.values)
    s->stats_.weight_bytes += v.is_initializer ? static_cast<int64_t>(v.data.nbytes()) : 0;
  s->backend_->fill_stats(&s->stats_);
  return Status();
}

SessionImpl::~SessionImpl() = default;

// A model with data-dependent shapes: its stages (runtime/staged.h) behind this session; the
// session keeps the whole model for its inputs and outputs.
Result<std::unique_ptr<SessionImpl>> SessionImpl::load_staged(ModelSpec spec, const SessionOptions& options,
                                                              double import_ms) {
  std::unique_ptr<SessionImpl> s(new SessionImpl());
  auto t0 = std::chrono::steady_clock::now();
  s->options_ = options;
  FUSERT_ASSIGN_OR_RETURN(s->backend_, create_backend(options));
  if (!spec.dims.empty()) FUSERT_RETURN_IF_ERROR(check_dim_limits(spec, options));
  FUSERT_ASSIGN_OR_RETURN(s->output_info_, SessionImpl::describe_outputs(spec));
  s->model_ = std::move(spec);
  FUSERT_ASSIGN_OR_RETURN(s->staged_, StagedModel::build(s->model_, options));
  s->stats_.load_ms = import_ms + ms_since(t0);
  s->stats_.weights_source = "the model file's own";
  s->staged_->add_stats(&s->stats_, true);
  s->stats_.execution_stages = s->staged_->stage_count();
  return s;
}

const Graph& SessionImpl::graph() const { return model_.graph; }

const ExecutionPlan& SessionImpl::plan() const {
  for (int k = 0; staged_ && k < staged_->stage_count(); ++k) {
    if (staged_->has_session(k)) return staged_->stage(k).plan();
  }
  return plan_;
}

const FusionPlan& SessionImpl::fusion_plan() const {
  for (int k = 0; staged_ && k < staged_->stage_count(); ++k) {
    if (staged_->has_session(k)) return staged_->stage(k).fusion_plan();
  }
  return fusion_;
}

std::string SessionImpl::explain() const { return staged_ ? staged_->explain() : explain_plan(model_.graph, fusion_); }

Result<TensorMap> SessionImpl::run_at(const DimValues& dims, const TensorMap& inputs) {
  RunInfo info;
  if (shapes_) return run_instance(dims, inputs, &info);
  return backend_->run(inputs, &info);
}

Status SessionImpl::init_device() {
  if (staged_) return staged_->init_device();
  FUSERT_RETURN_IF_ERROR(backend_->available());
  FUSERT_RETURN_IF_ERROR(backend_->prepare(model_.graph, plan_));
  backend_->fill_stats(&stats_);
  return Status();
}

std::string SessionImpl::backend_report() const { return staged_ ? staged_->report() : backend_->report(model_.graph); }

size_t SessionImpl::execution_contexts() const {
  return staged_ ? staged_->execution_contexts() : backend_->execution_contexts();
}

// Runs the canonicalised graph unfused once and returns each node's time in ms.
Result<std::map<std::string, double>> SessionImpl::profile_unfused() const {
  Graph g = model_.graph;
  for (Value& v : g.values)
    if (!v.data.empty()) v.data = v.data.clone();  // passes may fold in place
  FUSERT_ASSIGN_OR_RETURN(auto log, run_canonicalize(g, false));
  FusionOptions none;
  none.enabled.clear();
  FUSERT_ASSIGN_OR_RETURN(FusionPlan plan, plan_fusion(g, none));
  ExecutionPlan ep;
  FUSERT_ASSIGN_OR_RETURN(ep.steps, lower_plan_cpu(g, plan));
  plan_memory(g, ep);
  Executor ex(g, ep, options_.threads);
  std::vector<double> step_ms;
  FUSERT_ASSIGN_OR_RETURN(auto out, ex.run(seeded_inputs(0), &step_ms));
  std::map<std::string, double> ms;
  for (size_t i = 0; i < ep.steps.size(); ++i) ms[ep.steps[i].name] = step_ms[i];
  return ms;
}

Result<TensorMap> SessionImpl::run(const TensorMap& inputs) {
  if (staged_) {
    Result<DimValues> bound = bind_dims(model_, inputs);
    bool empty_input = false;
    for (const auto& [name, t] : inputs) empty_input |= t.numel() == 0;
    if (!bound.ok() && empty_input) {  // (SessionImpl::empty_outputs serves a model of one stage only)
      return error(bound.status().code()) << bound.status().message() << "; a model run in execution stages takes "
                                          << "no empty input";
    }
    FUSERT_ASSIGN_OR_RETURN(DimValues dims, std::move(bound));
    FUSERT_ASSIGN_OR_RETURN(TensorMap out, staged_->run(dims, inputs));
    std::lock_guard<std::mutex> lock(*run_mu_);
    SessionStats& st = stats_;
    st.shape_cache_hits = st.shape_cache_misses = st.shape_replans = 0;
    st.shape_build_ms_max = st.shape_build_ms_total = 0;
    staged_->add_stats(&st, false);
    return out;
  }
  if (!backend_->ready()) {
    return error(StatusCode::kDeviceError)
           << "--device " << backend_->name() << ": the session has no device (plan only)";
  }
  RunInfo info;
  TensorMap out;
  if (shapes_) {
    Result<DimValues> dims = bind_dims(model_, inputs);
    if (!dims.ok()) {  // an empty input whose outputs are all empty: their shapes, nothing computed
      bool empty_input = false;
      for (const auto& [name, t] : inputs) empty_input |= t.numel() == 0;
      if (!empty_input) return dims.status();
      Result<TensorMap> empty = empty_outputs(inputs);
      if (empty.ok()) return empty;
      if (empty.status().message() == dims.status().message() || empty.status().message() == "no dim is 0")
        return dims.status();
      return error(dims.status().code()) << dims.status().message() << "; at 0: " << empty.status().message();
    }
    FUSERT_ASSIGN_OR_RETURN(out, run_instance(*dims, inputs, &info));
  } else {
    FUSERT_ASSIGN_OR_RETURN(out, backend_->run(inputs, &info));
  }
  std::lock_guard<std::mutex> lock(*run_mu_);
  stats_.last_run_device_ms = info.device_ms;
  stats_.cuda_graph = info.cuda_graph;
  return out;
}

Result<std::vector<SessionImpl::StepTime>> SessionImpl::profile(const TensorMap& inputs, int runs) const {
  if (runs < 1) return error(StatusCode::kInvalidArgument) << "profile: runs must be >= 1, got " << runs;
  if (staged_) {
    Result<DimValues> bound = bind_dims(model_, inputs);
    bool empty_input = false;
    for (const auto& [name, t] : inputs) empty_input |= t.numel() == 0;
    if (!bound.ok() && empty_input) {  // (SessionImpl::empty_outputs serves a model of one stage only)
      return error(bound.status().code()) << bound.status().message() << "; a model run in execution stages takes "
                                          << "no empty input";
    }
    FUSERT_ASSIGN_OR_RETURN(DimValues dims, std::move(bound));
    return staged_->profile(dims, inputs, runs);
  }
  return profile_at(nullptr, inputs, runs);
}

Result<std::vector<SessionImpl::StepTime>> SessionImpl::profile_at(const DimValues* at, const TensorMap& inputs,
                                                                   int runs) const {
  // A model with symbolic dims: the plan of the inputs' shape (built now if new).
  const Backend* backend = backend_.get();
  const ExecutionPlan* plan = &plan_;
  std::shared_ptr<ShapeInstance> inst;
  if (shapes_) {
    DimValues dims;
    if (at) {
      dims = *at;
    } else {
      FUSERT_ASSIGN_OR_RETURN(dims, bind_dims(model_, inputs));
    }
    if (dims != model_.dim_values) {
      bool hit = false;
      FUSERT_ASSIGN_OR_RETURN(inst, shapes_->get(
                                        dims, [this](const DimValues& d) { return build_instance(d); }, &hit));
      backend = inst->backend.get();
      plan = &inst->plan;
    }
  }
  std::vector<std::vector<double>> per_step(plan->steps.size());
  for (int r = 0; r <= runs; ++r) {
    RunInfo info;
    info.want_step_ms = true;
    FUSERT_ASSIGN_OR_RETURN(TensorMap out, backend->run(inputs, &info));
    if (info.step_ms.size() != plan->steps.size())  // the backend does not time steps
      return error(StatusCode::kUnsupported)
             << "per-step profile: the " << backend->name() << " backend does not time its steps (CPU only)";
    if (r == 0) continue;  // warm-up: first touch of the arena and the primitives' scratch
    for (size_t i = 0; i < per_step.size(); ++i) per_step[i].push_back(info.step_ms[i]);
  }
  const Graph& g = inst ? inst->graph : model_.graph;
  std::vector<StepTime> out;
  for (size_t i = 0; i < plan->steps.size(); ++i) {
    const Step& st = plan->steps[i];
    std::vector<double>& v = per_step[i];
    std::sort(v.begin(), v.end());
    double flops = 0;
    for (int n : st.nodes) flops += static_cast<double>(node_flops(g, n));
    out.push_back({st.name, st.alias_of == kNoValue ? st.kernel : "view", st.detail, static_cast<int>(st.nodes.size()),
                   v.empty() ? 0.0 : v[v.size() / 2], flops, st.alias_of == kNoValue && st.reference_loop});
  }
  return out;
}

TensorMap SessionImpl::seeded_inputs(uint64_t seed, const DimValues& dims) const {
  cpu::ThreadScope threads(options_.threads);
  TensorMap m;
  const Graph& g = model_.graph;
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Value& v = g.value(g.inputs[k]);
    Shape shape = v.shape;
    for (size_t d = 0; k < model_.input_dims.size() && d < shape.size(); ++d) {
      auto it = dims.find(model_.input_dims[k][d]);
      if (it != dims.end()) shape[d] = it->second;
    }
    if (v.dtype == DType::kF32) {
      m.emplace(v.name, seeded_tensor(v.name, shape, InitKind::kInput, seed));
    } else {  // integer inputs (token ids, masks): all ones, valid for both (models/FORMAT.md)
      Tensor t(v.dtype, shape);
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (v.dtype == DType::kI64)
          t.i64()[i] = 1;
        else if (v.dtype == DType::kI32)
          static_cast<int32_t*>(t.raw())[i] = 1;
        else if (v.dtype == DType::kBool)
          static_cast<uint8_t*>(t.raw())[i] = 1;
      }
      m.emplace(v.name, t);
    }
  }
  return m;
}

}  // namespace fusert
