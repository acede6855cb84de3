// Top-k printing and the statistics JSON written by --stats-json.
#include "apps/infer/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace fusert::app {

Latency summarize(std::vector<double> ms) {
  Latency l;
  if (ms.empty()) return l;
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  l.median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  l.min = ms.front();
  l.max = ms.back();
  return l;
}

std::vector<std::string> read_labels(const std::string& path) {
  std::vector<std::string> labels;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) labels.push_back(line);
  return labels;
}

void print_topk(const float* x, int64_t c, const std::vector<std::string>& labels, int topk) {
  double mx = -INFINITY, sum = 0;
  for (int64_t i = 0; i < c; ++i) mx = std::max(mx, static_cast<double>(x[i]));
  std::vector<double> p(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) sum += p[static_cast<size_t>(i)] = std::exp(x[i] - mx);
  std::vector<int64_t> idx(static_cast<size_t>(c));
  for (int64_t i = 0; i < c; ++i) idx[static_cast<size_t>(i)] = i;
  int64_t k = std::min<int64_t>(topk, c);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int64_t a, int64_t b) { return x[a] > x[b]; });
  bool named = static_cast<int64_t>(labels.size()) == c;
  for (int64_t r = 0; r < k; ++r) {
    int64_t i = idx[static_cast<size_t>(r)];
    std::printf("  %lld. %-28s %.4f  (class %lld, logit %.4f)\n", static_cast<long long>(r + 1),
                named ? labels[static_cast<size_t>(i)].c_str() : ("class " + std::to_string(i)).c_str(),
                p[static_cast<size_t>(i)] / sum, static_cast<long long>(i), x[i]);
  }
}

void print_outputs(const TensorMap& outputs, const std::vector<std::string>& labels, int topk) {
  for (const auto& [name, t] : outputs) {
    std::printf("output '%s' %s\n", name.c_str(), shape_str(t.shape()).c_str());
    if (t.dtype() != DType::kF32 || t.shape().size() != 2 || t.shape()[0] > 8) continue;
    const int64_t n = t.shape()[0], c = t.shape()[1];
    for (int64_t row = 0; row < n; ++row) {
      if (n == 1)
        std::printf("top-%d (softmax of '%s'):\n", std::min<int>(topk, static_cast<int>(c)), name.c_str());
      else
        std::printf("item %lld, top-%d (softmax of '%s'):\n", static_cast<long long>(row),
                    std::min<int>(topk, static_cast<int>(c)), name.c_str());
      print_topk(t.f32() + row * c, c, labels, topk);
    }
  }
}

Status write_stats_json(const std::string& path, const Session& s, const Latency& lat, int runs, double first_run_ms) {
  const SessionStats& st = s.stats();
  nlohmann::json j = {
      {"model", s.graph().name},
      {"model_file", s.model().path},
      {"device", s.options().device},
      {"fusion", s.options().fusion},
      {"precision", s.options().precision},
      {"threads", s.options().threads},
      {"weights", st.weights_source},
      {"nodes", st.nodes},
      {"kernels", st.kernels},
      {"intermediate_bytes", st.intermediate_bytes},
      {"peak_activation_bytes", st.peak_activation_bytes},
      {"naive_activation_bytes", st.naive_activation_bytes},
      {"load_ms", st.load_ms},
      {"plan_ms", st.plan_ms},
      {"shape_cache_hits", st.shape_cache_hits},
      {"shape_cache_misses", st.shape_cache_misses},
      {"execution_stages", st.execution_stages},
      {"shape_build_ms_max", st.shape_build_ms_max},
      {"runs", runs},
      {"latency_ms", {{"median", lat.median}, {"min", lat.min}, {"max", lat.max}}},
      {"first_run_ms", first_run_ms},
      {"fusion_plan_ms", st.fusion_plan_ms},
      {"canonicalize_ms", st.canonicalize_ms},
      {"family", s.fusion_plan().family},
      {"groups", s.fusion_plan().count_by_strategy()},
      {"fused_ops", s.fusion_plan().fused_ops()},
      {"rejected", s.fusion_plan().rejected_by_key()},
      {"passes", st.pass_log},
      {"weight_bytes", st.weight_bytes},
  };
  if (s.options().device == "cuda") {
    j["device_name"] = st.device_name;
    j["generated_kernels"] = st.generated_kernels;
    j["library_calls"] = st.library_calls;
    j["host_fallback_steps"] = st.host_fallback_steps;
    j["cuda_graph"] = st.cuda_graph;
    j["tf32"] = s.options().tf32;
    j["compile_ms"] = st.compile_ms;
    j["latency_clock"] = "cuda events (plan only, host<->device copies excluded)";
  }
  std::ofstream f(path);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot open for writing";
  f << j.dump(2) << "\n";
  f.close();
  if (!f) return error(StatusCode::kIoError) << path << ": write failed (disk full or not writable?)";
  return Status();
}

}  // namespace fusert::app
