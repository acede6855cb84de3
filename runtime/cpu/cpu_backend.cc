// The CPU backend: the reference kernels (kernels/cpu) over the CPU lowering, run by the
// executor core on the CPU device (one execution context per concurrent run).
#include <new>

#include "kernels/cpu/onednn.h"
#include "runtime/backend.h"
#include "runtime/cpu/lower_cpu.h"
#include "runtime/executor.h"

namespace fusert {

namespace {

class CpuBackend final : public Backend {
 public:
  CpuBackend(const SessionOptions& o, CpuKernels kernels)
      : threads_(o.threads),
        kernels_(kernels),
        all_blocks_(o.all_blocks),
        jitter_(o.jitter_steps),
        pin_(o.pin_threads) {}

  std::string name() const override { return "cpu"; }
  Status available() const override { return Status(); }
  void configure_planner(FusionOptions* o, bool will_lower) override {
    (void)will_lower;
    // Every group kind has a CPU kernel, but a 1x1 + depthwise block only pays as one oneDNN
    // primitive (the dw post-op, lower_onednn.cc): the reference kernels would
    // run the two convolutions one after the other anyway. The check creates the primitive
    // (oneDNN keeps it in its primitive cache for the lowering).
    const CpuKernels kernels = kernels_;
    const bool every = all_blocks_;
    //
    // Sibling 1x1 convolutions stay apart on oneDNN: as one convolution on concatenated weights
    // their outputs were split into NCHW members, while each alone keeps the layout its
    // neighbours share (the layout pass), so two reorders per member disappear. GoogLeNet, 2
    // threads, AVX-512, infer --profile: batch 8 86.6 -> 76.9 ms, batch 1 11.2 -> 10.9; AVX2
    // (ONEDNN_MAX_CPU_ISA): level.
    o->supports = [kernels, every](const Graph& g, const FusionGroup& candidate) {
      if (uses_onednn(kernels) && candidate.kind == GroupKind::kHorizontalGemm && !candidate.nodes.empty() &&
          g.nodes[static_cast<size_t>(candidate.nodes[0])].op == OpKind::kConv)
        return FusionDecision::no(
            "backend", "sibling 1x1 convolutions run apart on oneDNN, each in the layout its neighbours keep");
      if (candidate.kind != GroupKind::kPointwiseDepthwise) return FusionDecision::yes();
      if (kernels == CpuKernels::kOneDnnBf16)
        return FusionDecision::no("backend",
                                  "bf16: the 1x1 convolution runs alone in bf16 (the 1x1 + depthwise "
                                  "primitive is f32)");
      if (!uses_onednn(kernels))
        return every
                   ? FusionDecision::yes()
                   : FusionDecision::no("backend", "the reference kernels have no single-pass 1x1 + depthwise kernel");
      Step s;
      Status st = lowering::lower_onednn(g, candidate, false, s);
      return st.ok() ? FusionDecision::yes() : FusionDecision::no("backend", st.message());
    };
  }
  Result<std::vector<Step>> lower(const Graph& g, const FusionPlan& plan) override {
    FUSERT_ASSIGN_OR_RETURN(std::vector<Step> steps, lower_plan_cpu(g, plan, kernels_));
    native_values_ = uses_onednn(kernels_) ? assign_native_layouts(g, steps) : 0;
    steps_.clear();
    for (const Step& s : steps) steps_.push_back({s.name, s.kernel, s.detail, s.alias_of != kNoValue});
    return steps;
  }
  Status prepare(const Graph& g, const ExecutionPlan& plan) override {
    if (!executor_) {
      executor_ = std::make_unique<ExecutorCore>(g, plan, make_cpu_device(g, plan, threads_, jitter_, pin_));
      arena_bytes_ = plan.arena_bytes;
    }
    return Status();
  }
  bool ready() const override { return executor_ != nullptr; }

  Result<TensorMap> run(const TensorMap& inputs, RunInfo* info) const override {
    try {
      return executor_->run(inputs, info && info->want_step_ms ? &info->step_ms : nullptr, info);
    } catch (const std::bad_alloc&) {  // a kernel's own scratch (im2col, packing)
      return error(StatusCode::kIoError) << "out of memory while running (execution context of " << arena_bytes_
                                         << " bytes)";
    }
  }

  /// One line per step that has something to say: the oneDNN primitive and its post-op chain,
  /// or why the reference kernel runs.
  std::string report(const Graph& g) const override {
    (void)g;
    int onednn = 0, reference = 0;
    std::string lines;
    for (const StepInfo& s : steps_) {
      if (s.alias) continue;
      const bool dnn = s.kernel.rfind("onednn", 0) == 0;
      onednn += dnn ? 1 : 0;
      reference += s.detail.rfind("reference kernel", 0) == 0 ? 1 : 0;
      if (!s.detail.empty()) lines += "  " + s.name + ": " + s.detail + "\n";
    }
    if (kernels_ == CpuKernels::kReference) return "cpu plan: reference kernels (--cpu-kernels reference)\n";
    return "cpu plan: " + std::to_string(onednn) + " oneDNN primitive step(s), " + std::to_string(reference) +
           " step(s) refused by oneDNN (reference kernels, reason below), " + std::to_string(native_values_) +
           " activation(s) kept in oneDNN's layout between oneDNN steps\n" + lines;
  }

  size_t execution_contexts() const override { return executor_ ? executor_->contexts() : 0; }

 private:
  int threads_;
  CpuKernels kernels_;
  bool all_blocks_;
  uint64_t jitter_;
  bool pin_;
  int native_values_ = 0;
  struct StepInfo {
    std::string name, kernel, detail;
    bool alias = false;
  };
  std::vector<StepInfo> steps_;  ///< what each lowered step became, for the report
  size_t arena_bytes_ = 0;
  std::unique_ptr<ExecutorCore> executor_;
};

}  // namespace

namespace {

// SessionOptions::precision: "f32", or "bf16" on the oneDNN anchors where the CPU runs bf16
// natively.
Status check_precision(const SessionOptions& options, CpuKernels kernels) {
  if (options.precision == "f32") return Status();
  if (options.precision != "bf16")
    return error(StatusCode::kInvalidArgument) << "precision: expected f32 or bf16, got '" << options.precision << "'";
  if (kernels != CpuKernels::kOneDnn)
    return error(StatusCode::kInvalidArgument)
           << "precision bf16 needs the oneDNN kernels (cpu_kernels onednn); the reference kernels are f32 only";
  if (!cpu::onednn::built())
    return error(StatusCode::kUnsupported) << "precision bf16 needs oneDNN, which this build does not link";
  if (!cpu::onednn::bf16_native())
    return error(StatusCode::kUnsupported)
           << "precision bf16: this CPU has no native bf16 arithmetic (AVX512_BF16 or AMX, as oneDNN sees it; "
              "ONEDNN_MAX_CPU_ISA may lower it); run in f32";
  return Status();
}

Status check_cpu_options(const SessionOptions& options) {
  CpuKernels kernels;
  FUSERT_RETURN_IF_ERROR(check_cpu_kernels(options, &kernels));
  return check_precision(options, kernels);
}

std::unique_ptr<Backend> make_cpu_backend(const SessionOptions& options) {
  CpuKernels kernels = CpuKernels::kOneDnn;
  parse_cpu_kernels(options.cpu_kernels, &kernels);                    // checked by check_cpu_options
  if (options.precision == "bf16") kernels = CpuKernels::kOneDnnBf16;  // checked there too
  return std::make_unique<CpuBackend>(options, kernels);
}

}  // namespace

Status check_cpu_kernels(const SessionOptions& options, CpuKernels* kernels) {
  if (parse_cpu_kernels(options.cpu_kernels, kernels)) return Status();
  return error(StatusCode::kInvalidArgument)
         << "cpu kernels: expected onednn or reference, got '" << options.cpu_kernels << "'";
}

// The planner's machine: the 2-core development VM (about 50 GFLOP/s f32 at the kernels' usual
// efficiency, 15 GB/s of memory traffic per step) and a step's dispatch over the thread pool.
const BackendInfo& cpu_backend_info() {
  static const BackendInfo info{"cpu", "host CPU: oneDNN primitives and fusert's fused kernels",
                                Roofline{50e9, 15e9, 5.0}, check_cpu_options, make_cpu_backend};
  return info;
}

}  // namespace fusert
