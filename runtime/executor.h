// The executor core that drives every backend: input checks, the pool of execution contexts
// (one activation arena each), buffer resolution (arena slots, aliases, weights), output
// gathering. A backend plugs in an ExecDevice that says how a context is made, how inputs and
// outputs cross to its memory and how the steps are dispatched (runtime/backend.h).
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/execution_plan.h"
#include "runtime/options.h"

namespace fusert {

/// Checks `inputs` against the graph inputs of `g`: every input present with its dtype and
/// shape, and no name that is not an input. Errors name the tensor, expected and actual.
Status check_inputs(const Graph& g, const TensorMap& inputs);

/// Resolves values to buffers for one run: an activation to its arena slot (an alias to its
/// root's slot), a weight to the graph's own host data, or, when `weights` is given, to the
/// backend's copy (e.g. a device buffer) looked up by the root value. Unknown weights: nullptr.
class ArenaBuffers final : public BufferTable {
 public:
  using WeightMap = std::map<ValueId, uint8_t*>;
  ArenaBuffers(const Graph& g, const ExecutionPlan& p, uint8_t* arena, const WeightMap* weights = nullptr)
      : g_(g), p_(p), arena_(arena), weights_(weights) {}
  void* raw(ValueId id) const override;
  float* f32(ValueId id) const override { return static_cast<float*>(raw(id)); }
  /// The value whose buffer `id` shares (itself when it is no alias).
  ValueId root(ValueId id) const;
  const BufferSlot& slot(ValueId id) const { return p_.slots[static_cast<size_t>(id)]; }

 private:
  const Graph& g_;
  const ExecutionPlan& p_;
  uint8_t* arena_;
  const WeightMap* weights_;
};

/// One in-flight run's private state on a device: its activation arena and whatever else a
/// backend keeps per run (staging buffers, a captured CUDA Graph).
struct ExecContext {
  virtual ~ExecContext() = default;
};

/// What a backend supplies to the executor core.
class ExecDevice {
 public:
  virtual ~ExecDevice() = default;
  /// Most execution contexts alive at once; 0 = unbounded (one per concurrent run). A device
  /// with one stream returns 1, and concurrent runs then take turns.
  virtual size_t max_contexts() const { return 0; }
  /// A fresh context with an arena of plan.arena_bytes. Errors: out of memory, device errors.
  virtual Result<std::unique_ptr<ExecContext>> create_context() const = 0;
  /// Copies `inputs` (checked, indexed like g.inputs) in, runs every step, and copies the graph
  /// outputs into `outputs` (allocated by the core with their dtype and shape, indexed like
  /// g.outputs). `step_ms` (nullable) receives each step's time in ms where the device can
  /// time steps; `info` receives what the run measured.
  virtual Status run(ExecContext& ctx, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                     std::vector<double>* step_ms, RunInfo* info) const = 0;
};

/// Drives an ExecDevice over a plan. Thread-safe: run() may be called concurrently from any
/// number of threads. Each call takes an execution context from the pool (creating one while
/// fewer than the device's max_contexts exist, else waiting for one), and returns it when done.
class ExecutorCore {
 public:
  ExecutorCore(const Graph& g, const ExecutionPlan& plan, std::unique_ptr<ExecDevice> device);
  ~ExecutorCore();
  /// One inference. `inputs` are checked for presence, dtype and shape (errors name the
  /// tensor, expected and actual). Returns the graph outputs by name (fresh host tensors).
  Result<TensorMap> run(const TensorMap& inputs, std::vector<double>* step_ms = nullptr, RunInfo* info = nullptr) const;
  /// Execution contexts created so far (the most runs that were in flight at once).
  size_t contexts() const;
  const ExecDevice& device() const { return *device_; }

 private:
  Result<std::unique_ptr<ExecContext>> acquire() const;
  void release(std::unique_ptr<ExecContext> c) const;
  const Graph& g_;
  const ExecutionPlan& plan_;
  std::unique_ptr<ExecDevice> device_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  mutable std::vector<std::unique_ptr<ExecContext>> free_;
  mutable size_t created_ = 0;
};

/// The CPU device: a host arena per context, the steps run in order on the calling thread with
/// `threads` CPU threads (cpu::ThreadScope; 0 = all cores), each step's wall time in step_ms.
/// `jitter`: SessionOptions::jitter_steps (testing); `pin`: SessionOptions::pin_threads.
std::unique_ptr<ExecDevice> make_cpu_device(const Graph& g, const ExecutionPlan& plan, int threads, uint64_t jitter = 0,
                                            bool pin = false);

/// The CPU executor: ExecutorCore over the CPU device (tests and unfused profiling use it
/// directly; sessions go through the CPU backend).
class Executor {
 public:
  Executor(const Graph& g, const ExecutionPlan& plan, int threads = 0)
      : core_(g, plan, make_cpu_device(g, plan, threads)) {}
  /// See ExecutorCore::run.
  Result<TensorMap> run(const TensorMap& inputs, std::vector<double>* step_ms = nullptr) const {
    return core_.run(inputs, step_ms);
  }
  size_t contexts() const { return core_.contexts(); }

 private:
  ExecutorCore core_;
};

}  // namespace fusert
