// The "ref" test backend (ref_backend.h): the CPU lowering on the reference kernels, behind a
// capability check of its own, run by the executor core on the CPU device.
#include "tests/backend_plugin/ref_backend.h"

#include "runtime/cpu/lower_cpu.h"
#include "runtime/executor.h"

namespace fusert::plugin {

namespace {

// The group kinds "ref" runs as one step; the planner is told the reason for the others.
bool runs_as_one_step(GroupKind k) {
  return k == GroupKind::kSingle || k == GroupKind::kAnchorEpilogue || k == GroupKind::kElementwise;
}

class RefBackend final : public Backend {
 public:
  explicit RefBackend(const SessionOptions& o) : threads_(o.threads) {}

  std::string name() const override { return "ref"; }
  Status available() const override { return Status(); }
  void configure_planner(FusionOptions* o, bool will_lower) override {
    (void)will_lower;
    o->supports = [](const Graph& g, const FusionGroup& candidate) {
      (void)g;
      if (runs_as_one_step(candidate.kind)) return FusionDecision::yes();
      return FusionDecision::no("backend", std::string("ref runs single ops, anchor epilogues and elementwise "
                                                       "chains only, not a ") +
                                               group_kind_name(candidate.kind) + " group");
    };
  }
  Result<std::vector<Step>> lower(const Graph& g, const FusionPlan& plan) override {
    for (const FusionGroup* grp : plan.kernel_groups()) {
      if (!runs_as_one_step(grp->kind))
        return error(StatusCode::kInternal) << "ref: group " << grp->name << " is a " << group_kind_name(grp->kind)
                                            << ", which its capability refused";
    }
    return lower_plan_cpu(g, plan, CpuKernels::kReference);
  }
  Status prepare(const Graph& g, const ExecutionPlan& plan) override {
    if (!executor_) executor_ = std::make_unique<ExecutorCore>(g, plan, make_cpu_device(g, plan, threads_));
    return Status();
  }
  bool ready() const override { return executor_ != nullptr; }
  Result<TensorMap> run(const TensorMap& inputs, RunInfo* info) const override {
    return executor_->run(inputs, nullptr, info);
  }

 private:
  int threads_;
  std::unique_ptr<ExecutorCore> executor_;
};

// "ref" computes in f32 on the reference kernels (SessionOptions::cpu_kernels does not apply).
Status check_ref_options(const SessionOptions& options) {
  if (options.precision != "f32")
    return error(StatusCode::kUnsupported) << "precision " << options.precision << ": device 'ref' runs f32 only";
  return Status();
}

std::unique_ptr<Backend> make_ref_backend(const SessionOptions& options) {
  return std::make_unique<RefBackend>(options);
}

}  // namespace

const BackendInfo& ref_backend_info() {
  static const BackendInfo info{"ref", "test plug-in: the reference CPU kernels, a few group kinds", kRefRoofline,
                                check_ref_options, make_ref_backend};
  return info;
}

}  // namespace fusert::plugin
