// --verify and --ablation for infer.
#include "apps/infer/analysis.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "apps/infer/report.h"
#include "runtime/verify.h"

namespace fusert::app {

Status print_verify(Session& s, const TensorMap& inputs) {
  FUSERT_ASSIGN_OR_RETURN(auto checks, verify_groups(s, inputs));
  // The unfused path is f32: a bf16 group differs from it by bf16's rounding (2^-8 relative per
  // rounded operand; 1e-3 to 3e-3 seen on ResNet-18's groups), not by a fusion error.
  const bool bf16 = s.options().precision == "bf16";
  const double bound = bf16 ? 1e-2 : 1e-4;
  const char* bound_text = bf16 ? "1e-2 (bf16 against the f32 unfused path)" : "1e-4";
  std::printf("verify: %zu fused groups against the unfused CPU path\n", checks.size());
  std::printf("  %-48s %-30s %5s %12s %12s\n", "group", "kernel", "ops", "max |err|", "rel L2");
  int bad = 0;
  for (const GroupCheck& c : checks) {
    bool ok = !c.nan_mismatch && c.rel_l2 <= bound;
    bad += ok ? 0 : 1;
    std::printf("  %-48.48s %-30.30s %5d %12.3e %12.3e%s%s\n", c.group.c_str(), c.kernel.c_str(), c.nodes, c.max_abs,
                c.rel_l2, ok ? "" : (c.nan_mismatch ? "  NaN/Inf MISMATCH" : "  EXCEEDS "),
                ok || c.nan_mismatch ? "" : bound_text);
  }
  if (bad) return error(StatusCode::kInternal) << bad << " fused group(s) disagree with the unfused path";
  std::printf("verify: all groups within relative L2 %s\n", bound_text);
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

Status print_profile(const InferOptions& o, const Session& s, const TensorMap& inputs) {
  FUSERT_ASSIGN_OR_RETURN(auto steps, s.profile(inputs, o.runs));
  double total = 0, ref_ms = 0, flops = 0;
  int ref_steps = 0;
  std::map<std::string, std::pair<int, double>> per_kernel;  // kernel -> steps, ms
  for (const auto& st : steps) {
    total += st.ms;
    flops += st.flops;
    if (st.reference_loop) {
      ref_ms += st.ms;
      ++ref_steps;
    }
    auto& k = per_kernel[st.kernel];
    k.first += 1;
    k.second += st.ms;
  }
  std::printf(
      "profile (%s, fusion %s%s, threads %d (0: all cores), median of %d run%s per step): %zu steps, %.3f ms, %.2f "
      "GFLOP (%.1f GFLOP/s)\n",
      s.graph().name.c_str(), s.options().fusion.c_str(), s.options().precision == "f32" ? "" : ", precision bf16",
      s.options().threads, o.runs, o.runs == 1 ? "" : "s", steps.size(), total, flops / 1e9,
      flops / std::max(total, 1e-9) / 1e6);
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return steps[a].ms > steps[b].ms; });
  std::printf(
      "  slowest steps (REF: a plain reference loop, not a kernel built for speed; GFLOP/s: the step's nodes' "
      "FLOPs over its time, - for data movement):\n  %9s %6s %8s  %-40s %-4s %-24s %s\n",
      "ms", "%", "GFLOP/s", "step", "", "kernel", "what it runs");
  for (size_t k = 0; k < order.size() && k < 15; ++k) {
    const auto& st = steps[order[k]];
    // Long names and details are cut, with "..." to say so (--explain prints them whole).
    auto cut = [](const std::string& v, size_t n) { return v.size() <= n ? v : v.substr(0, n - 3) + "..."; };
    char rate[16] = "-";
    if (st.flops > 0 && st.ms > 0) std::snprintf(rate, sizeof rate, "%.1f", st.flops / st.ms / 1e6);
    std::printf("  %9.3f %5.1f%% %8s  %-40s %-4s %-24s %s\n", st.ms, 100 * st.ms / std::max(total, 1e-9), rate,
                cut(st.name, 40).c_str(), st.reference_loop ? "REF" : "", cut(st.kernel, 24).c_str(),
                cut(st.detail, 90).c_str());
  }
  std::vector<std::pair<std::string, std::pair<int, double>>> kernels(per_kernel.begin(), per_kernel.end());
  std::sort(kernels.begin(), kernels.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::printf("  per kernel:\n  %9s %6s %6s  %s\n", "ms", "%", "steps", "kernel");
  for (const auto& [name, k] : kernels) {
    std::printf("  %9.3f %5.1f%% %6d  %s\n", k.second, 100 * k.second / std::max(total, 1e-9), k.first, name.c_str());
  }
  std::printf("reference loops: %d step%s, %.3f ms, %.1f%% of the time\n", ref_steps, ref_steps == 1 ? "" : "s", ref_ms,
              100 * ref_ms / std::max(total, 1e-9));
  return Status();
}

}  // namespace fusert::app
