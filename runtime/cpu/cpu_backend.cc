// The CPU backend: the reference kernels (kernels/cpu) over the CPU lowering, run by the
// executor core on the CPU device (one execution context per concurrent run).
#include <new>

#include "runtime/backend.h"
#include "runtime/cpu/lower_cpu.h"
#include "runtime/executor.h"

namespace fusert {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const SessionOptions& o) : threads_(o.threads) {}

  std::string name() const override { return "cpu"; }
  Status available() const override { return Status(); }
  void configure_planner(FusionOptions* o, bool will_lower) override {
    (void)will_lower;
    o->backend = "cpu";  // every group kind has a CPU kernel: no capability refusals
  }
  Result<std::vector<Step>> lower(const Graph& g, const FusionPlan& plan) override { return lower_plan_cpu(g, plan); }
  Status prepare(const Graph& g, const ExecutionPlan& plan) override {
    if (!executor_) {
      executor_ = std::make_unique<ExecutorCore>(g, plan, make_cpu_device(g, plan, threads_));
      arena_bytes_ = plan.arena_bytes;
    }
    return Status();
  }
  bool ready() const override { return executor_ != nullptr; }

  Result<TensorMap> run(const TensorMap& inputs, RunInfo* info) const override {
    try {
      return executor_->run(inputs, nullptr, info);
    } catch (const std::bad_alloc&) {  // a kernel's own scratch (im2col, packing)
      return error(StatusCode::kIoError) << "out of memory while running (execution context of " << arena_bytes_
                                         << " bytes)";
    }
  }

  size_t execution_contexts() const override { return executor_ ? executor_->contexts() : 0; }

 private:
  int threads_;
  size_t arena_bytes_ = 0;
  std::unique_ptr<ExecutorCore> executor_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(const SessionOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace fusert
