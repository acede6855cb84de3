// --verify and --ablation for infer.
#include "apps/infer/analysis.h"

#include <chrono>
#include <cstdio>

#include "apps/infer/report.h"
#include "runtime/verify.h"

namespace fusert::app {

Status print_verify(Session& s, const TensorMap& inputs) {
  FUSERT_ASSIGN_OR_RETURN(auto checks, verify_groups(s, inputs));
  std::printf("verify: %zu fused groups against the unfused CPU path\n", checks.size());
  std::printf("  %-48s %-30s %5s %12s %12s\n", "group", "kernel", "ops", "max |err|", "rel L2");
  int bad = 0;
  for (const GroupCheck& c : checks) {
    bool ok = !c.nan_mismatch && c.rel_l2 <= 1e-4;
    bad += ok ? 0 : 1;
    std::printf("  %-48.48s %-30.30s %5d %12.3e %12.3e%s\n", c.group.c_str(), c.kernel.c_str(), c.nodes, c.max_abs,
                c.rel_l2, ok ? "" : (c.nan_mismatch ? "  NaN/Inf MISMATCH" : "  EXCEEDS 1e-4"));
  }
  if (bad) return error(StatusCode::kInternal) << bad << " fused group(s) disagree with the unfused path";
  std::printf("verify: all groups within relative L2 1e-4\n");
  return Status();
}

Status print_ablation(const InferOptions& o, const TensorMap& inputs) {
  const char* modes[] = {"raw", "none", "vertical", "horizontal", "cross", "compound", "all"};
  std::printf("ablation (%s, %d run%s each after %d warm-up):\n", o.model.c_str(), o.runs, o.runs == 1 ? "" : "s",
              o.warmup);
  std::printf("  %-11s %8s %16s %14s %12s %12s\n", "fusion", "kernels", "intermediate B", "peak B", "latency ms",
              "max |err|");
  Tensor reference;
  std::string first_output;
  for (const char* mode : modes) {
    SessionOptions so = o.session;
    so.fusion = mode;
    FUSERT_ASSIGN_OR_RETURN(auto s, Session::load(o.model, so));
    TensorMap out;
    for (int i = 0; i < o.warmup; ++i) {
      FUSERT_ASSIGN_OR_RETURN(out, s->run(inputs));
    }
    std::vector<double> times;
    for (int i = 0; i < o.runs; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      FUSERT_ASSIGN_OR_RETURN(out, s->run(inputs));
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    first_output = s->graph().value(s->graph().outputs[0]).name;
    const Tensor& y = out.at(first_output);
    if (reference.empty()) reference = y.clone();
    const SessionStats& st = s->stats();
    std::printf("  %-11s %8lld %16lld %14lld %12.2f %12.3e\n", mode, static_cast<long long>(st.kernels),
                static_cast<long long>(st.intermediate_bytes), static_cast<long long>(st.peak_activation_bytes),
                summarize(times).median, max_abs_diff(y, reference));
  }
  std::printf("  (max |err| of output '%s' against fusion raw, the graph as written)\n", first_output.c_str());
  return Status();
}

}  // namespace fusert::app
