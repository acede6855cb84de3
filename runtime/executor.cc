// The executor core (context pool, input checks, buffer resolution, outputs) and the CPU device.
#include "runtime/executor.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <new>

#include "kernels/cpu/cpu_kernels.h"

namespace fusert {

ValueId ArenaBuffers::root(ValueId id) const {
  ValueId r = p_.slots[static_cast<size_t>(id)].root;
  return r == kNoValue ? id : r;
}

void* ArenaBuffers::raw(ValueId id) const {
  const ValueId r = root(id);
  const Value& v = g_.value(r);
  if (v.is_initializer) {
    if (!weights_) return const_cast<void*>(v.data.raw());
    auto it = weights_->find(r);
    return it == weights_->end() ? nullptr : it->second;
  }
  return arena_ + p_.slots[static_cast<size_t>(id)].offset;
}

Status check_inputs(const Graph& g, const TensorMap& inputs) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      return error(StatusCode::kInvalidArgument) << "missing input '" << v.name << "' " << shape_str(v.shape);
    const Tensor& t = it->second;
    if (t.dtype() != v.dtype) {
      return error(StatusCode::kInvalidArgument)
             << "input '" << v.name << "': expected dtype " << dtype_name(v.dtype) << ", got " << dtype_name(t.dtype());
    }
    if (t.shape() != v.shape) {
      return error(StatusCode::kShapeMismatch)
             << "input '" << v.name << "': expected shape " << shape_str(v.shape) << ", got " << shape_str(t.shape());
    }
  }
  for (const auto& kv : inputs) {
    ValueId id = g.find_value(kv.first);
    if (id == kNoValue || !g.value(id).is_graph_input)
      return error(StatusCode::kInvalidArgument) << "'" << kv.first << "' is not an input of model '" << g.name << "'";
  }
  return Status();
}

ExecutorCore::ExecutorCore(const Graph& g, const ExecutionPlan& plan, std::unique_ptr<ExecDevice> device)
    : g_(g), plan_(plan), device_(std::move(device)) {}
ExecutorCore::~ExecutorCore() = default;

Result<std::unique_ptr<ExecContext>> ExecutorCore::acquire() const {
  {
    std::unique_lock<std::mutex> lock(mu_);
    const size_t bound = device_->max_contexts();
    cv_.wait(lock, [&] { return !free_.empty() || bound == 0 || created_ < bound; });
    if (!free_.empty()) {
      std::unique_ptr<ExecContext> c = std::move(free_.back());
      free_.pop_back();
      return c;
    }
    ++created_;  // counted before creation so that a bounded pool never overshoots
  }
  Result<std::unique_ptr<ExecContext>> c = device_->create_context();
  if (!c.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    --created_;
    cv_.notify_one();
  }
  return c;
}

void ExecutorCore::release(std::unique_ptr<ExecContext> c) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(std::move(c));
  }
  cv_.notify_one();
}

size_t ExecutorCore::contexts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

Result<TensorMap> ExecutorCore::run(const TensorMap& inputs, std::vector<double>* step_ms, RunInfo* info) const {
  FUSERT_RETURN_IF_ERROR(check_inputs(g_, inputs));
  std::vector<const Tensor*> in;
  for (ValueId id : g_.inputs) in.push_back(&inputs.at(g_.value(id).name));
  TensorMap out;
  std::vector<Tensor*> outs;
  for (ValueId id : g_.outputs) {
    const Value& v = g_.value(id);
    outs.push_back(&out.emplace(v.name, Tensor(v.dtype, v.shape)).first->second);
  }
  FUSERT_ASSIGN_OR_RETURN(std::unique_ptr<ExecContext> ctx, acquire());
  struct Release {  // the context goes back to the pool on every path out
    const ExecutorCore* ex;
    std::unique_ptr<ExecContext>* c;
    ~Release() { ex->release(std::move(*c)); }
  } release{this, &ctx};
  RunInfo local;
  FUSERT_RETURN_IF_ERROR(device_->run(*ctx, in, outs, step_ms, info ? info : &local));
  return out;
}

namespace {

struct CpuContext final : ExecContext {
  Tensor arena;
};

class CpuDevice final : public ExecDevice {
 public:
  CpuDevice(const Graph& g, const ExecutionPlan& plan, int threads, uint64_t jitter, bool pin)
      : g_(g), plan_(plan), threads_(threads), jitter_(jitter), pin_(pin) {}

  Result<std::unique_ptr<ExecContext>> create_context() const override {
    auto c = std::make_unique<CpuContext>();
    try {
      c->arena = Tensor(DType::kF32, Shape{static_cast<int64_t>((plan_.arena_bytes + 3) / 4)});
    } catch (const std::bad_alloc&) {
      return error(StatusCode::kIoError) << "out of memory: an execution context of " << plan_.arena_bytes
                                         << " bytes could not be allocated";
    }
    return std::unique_ptr<ExecContext>(std::move(c));
  }

  Status run(ExecContext& ctx, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
             std::vector<double>* step_ms, RunInfo* info) const override {
    const auto start = std::chrono::steady_clock::now();
    cpu::ThreadScope threads(threads_);
    cpu::CorePinScope pinned(pin_ ? cpu::num_threads() : 0);
    ArenaBuffers table(g_, plan_, static_cast<uint8_t*>(static_cast<CpuContext&>(ctx).arena.raw()));
    for (size_t i = 0; i < inputs.size(); ++i)
      std::memcpy(table.raw(g_.inputs[i]), inputs[i]->raw(), inputs[i]->nbytes());
    if (step_ms) step_ms->assign(plan_.steps.size(), 0.0);
    for (size_t i = 0; i < plan_.steps.size(); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      const Step& step = plan_.steps[i];
      if (step.check) FUSERT_RETURN_IF_ERROR(step.check(table));
      if (step.run) step.run(table);
      if (jitter_) jitter_outputs(step, table);
      if (step_ms)
        (*step_ms)[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      std::memcpy(outputs[i]->raw(), table.raw(g_.outputs[i]), outputs[i]->nbytes());
    info->device_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return Status();
  }

 private:
  // SessionOptions::jitter_steps: a few ulps on every float32 element the step wrote (a view's
  // output is its source's buffer and is left alone). A Gelu step's output moves by a few ulps of
  // x / 2 instead where that is more: x/2 * (1 + erf(x / sqrt(2))) cancels for negative x, so two
  // erf implementations (libm's, oneDNN's post-op polynomial) a few ulps apart differ by that
  // much absolutely, however small the result.
  void jitter_outputs(const Step& step, const BufferTable& table) const {
    if (step.alias_of != kNoValue) return;
    const bool gelu = step.nodes.size() == 1 && g_.nodes[static_cast<size_t>(step.nodes[0])].op == OpKind::kGelu;
    const float* x = gelu ? table.f32(g_.nodes[static_cast<size_t>(step.nodes[0])].inputs[0]) : nullptr;
    for (ValueId v : step.outputs) {
      const Value& val = g_.value(v);
      if (val.dtype != DType::kF32) continue;
      // A stream of its own per value and seed: one sequence restarted at every step moved the
      // same element positions alike everywhere (two near-equal neighbours a LayerNorm over 2
      // subtracts moved together, and the probe missed their rounding).
      uint64_t state = (0x9E3779B97F4A7C15ull * jitter_) ^ (static_cast<uint64_t>(v) + 1) * 0xD1B54A32D192ED03ull;
      float* p = table.f32(v);
      for (int64_t i = 0, n = shape_numel(val.shape); i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const double u = static_cast<double>(state >> 11) * 0x1.0p-53 * 2 - 1;
        const double d = x ? std::max(std::fabs(static_cast<double>(p[i])), 0.5 * std::fabs(x[i])) : p[i];
        p[i] = static_cast<float>(p[i] + d * u * 0x1.0p-22);
      }
    }
  }

  const Graph& g_;
  const ExecutionPlan& plan_;
  int threads_;
  uint64_t jitter_;
  bool pin_;
};

}  // namespace

std::unique_ptr<ExecDevice> make_cpu_device(const Graph& g, const ExecutionPlan& plan, int threads, uint64_t jitter,
                                            bool pin) {
  return std::make_unique<CpuDevice>(g, plan, threads, jitter, pin);
}

}  // namespace fusert
