// bench: fused vs unfused latency of every zoo model, measured side by side in one run
// (runs interleaved so machine noise hits both alike). Ratios, not absolute times, are the
// result on a shared development machine. On the CPU each run is timed by the wall clock; with
// --device cuda by the session's CUDA events around the plan (stats().last_run_device_ms,
// excluding input/output copies), with or without CUDA Graphs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "apps/bench/serve.h"
#include "runtime/backend.h"
#include "runtime/session.h"

using namespace fusert;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Result<double> time_once(Session& s, const TensorMap& in) {
  auto t0 = std::chrono::steady_clock::now();
  FUSERT_ASSIGN_OR_RETURN(auto out, s.run(in));
  if (s.options().device == "cuda") return s.stats().last_run_device_ms;
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Integer inputs (token ids, masks) get valid values: ids 100.., mask all ones.
TensorMap bench_inputs(const Session& s) {
  TensorMap in = s.seeded_inputs(0);
  for (ValueId id : s.graph().inputs) {
    const Value& v = s.graph().value(id);
    if (v.dtype != DType::kI64) continue;
    Tensor t(DType::kI64, v.shape);
    bool mask = v.name.find("mask") != std::string::npos;
    for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = mask ? 1 : 100 + i % 1000;
    in[v.name] = t;
  }
  return in;
}

// Times `sessions` interleaved (A B C A B C ...), 2 warm-up rounds; median ms of each.
Result<std::vector<double>> interleaved(const std::vector<Session*>& sessions, const TensorMap& in, int runs) {
  std::vector<std::vector<double>> t(sessions.size());
  for (int i = 0; i < runs + 2; ++i) {
    for (size_t k = 0; k < sessions.size(); ++k) {
      FUSERT_ASSIGN_OR_RETURN(double x, time_once(*sessions[k], in));
      if (i >= 2) t[k].push_back(x);
    }
  }
  std::vector<double> m;
  for (auto& v : t) m.push_back(median(v));
  return m;
}

// none and all on the chosen kernels; on the CPU with oneDNN also all on the reference kernels.
Status bench_model(const std::string& path, int runs, const SessionOptions& base) {
  SessionOptions none = base, all = base, ref = base;
  none.fusion = "none";
  all.fusion = ref.fusion = "all";
  ref.cpu_kernels = "reference";
  none.seeded = all.seeded = ref.seeded = true;
  const bool with_ref = base.device == "cpu" && base.cpu_kernels != "reference";
  FUSERT_ASSIGN_OR_RETURN(auto a, Session::load(path, none));
  FUSERT_ASSIGN_OR_RETURN(auto b, Session::load(path, all));
  std::unique_ptr<Session> c;
  if (with_ref) {
    FUSERT_ASSIGN_OR_RETURN(c, Session::load(path, ref));
  }
  TensorMap in = bench_inputs(*a);
  std::vector<Session*> ss = {a.get(), b.get()};
  if (c) ss.push_back(c.get());
  FUSERT_ASSIGN_OR_RETURN(std::vector<double> ms, interleaved(ss, in, runs));
  const double ma = ms[0], mb = ms[1];
  std::printf("%-20s %8lld %8lld %12.2f %12.2f %8.2fx %10.2f %8.3f", a->graph().name.c_str(),
              static_cast<long long>(a->stats().kernels), static_cast<long long>(b->stats().kernels), ma, mb, ma / mb,
              static_cast<double>(b->stats().intermediate_bytes) /
                  static_cast<double>(std::max<int64_t>(a->stats().intermediate_bytes, 1)),
              b->stats().fusion_plan_ms);
  if (c) std::printf(" %12.2f %8.2fx", ms[2], ms[2] / mb);
  std::printf("\n");
  return Status();
}

constexpr const char* kUsage =
    "usage: bench [--runs N] [--device cpu|cuda] [--cpu-kernels onednn|reference] [--no-cuda-graph] [--tf32]\n"
    "             [model.yaml ...]\n"
    "       bench --serve model.yaml|model.onnx [--fusion all|none|raw] [--threads T] [--input NAME=F.npy]\n"
    "                     [--shape NAME=1x3x640x640 (ONNX inputs with symbolic dims)] [--precision f32|bf16]\n"
    "       bench --fma-peak [--threads T]\n"
    "  (default: every zoo model, seeded weights, CPU; on the CPU with oneDNN anchors also the fused\n"
    "  plan on the reference kernels, interleaved: column 'ref all ms' and its ratio to 'all ms')\n"
    "  --serve: a worker holding one session, timing one run per 'run' line on stdin (tools/cpu_bench.py,\n"
    "  `make bench`, drives it against ONNX Runtime); --fma-peak: the measured FP32 FMA peak in GFLOP/s";

// The table's title and header for the device.
void print_header(const SessionOptions& base, int runs) {
  const bool cuda = base.device == "cuda";
  if (cuda) {
    std::printf(
        "CUDA latency (CUDA events around the plan, %s%s), median of %d interleaved runs (seeded weights and inputs)\n",
        base.cuda_graph ? "CUDA Graphs" : "no CUDA Graphs", base.tf32 ? ", TF32" : "", runs);
  } else {
    std::printf(
        "CPU latency, median of %d interleaved runs (seeded weights and inputs); none = canonicalised (BN folded),\n"
        "unfused: the speedup is fusion alone\n",
        runs);
  }
  std::printf("%-20s %8s %8s %12s %12s %9s %10s %8s", "model", "k(none)", "k(all)", "none ms", "all ms", "speedup",
              "bytes all/none", "plan ms");
  if (!cuda && base.cpu_kernels != "reference") std::printf(" %12s %9s", "ref all ms", "ref/all");
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && (!std::strcmp(argv[1], "--serve") || !std::strcmp(argv[1], "--fma-peak"))) {
    std::vector<std::string> rest(argv + 2, argv + argc);
    return !std::strcmp(argv[1], "--serve") ? bench::serve(rest) : bench::fma_peak(rest);
  }
  int runs = 10;
  SessionOptions base;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--runs") && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--device") && i + 1 < argc)
      base.device = argv[++i];
    else if (!std::strcmp(argv[i], "--no-cuda-graph"))
      base.cuda_graph = false;
    else if (!std::strcmp(argv[i], "--tf32"))
      base.tf32 = true;
    else if (!std::strcmp(argv[i], "--cpu-kernels") && i + 1 < argc)
      base.cpu_kernels = argv[++i];
    else if (!std::strcmp(argv[i], "--help")) {
      std::puts(kUsage);
      return 0;
    } else if (argv[i][0] == '-') {
      std::fprintf(stderr, "bench: unknown option '%s' (see --help)\n", argv[i]);
      return 2;
    } else
      models.push_back(argv[i]);
  }
  if (!is_backend(base.device)) {
    std::fprintf(stderr, "bench: --device: expected %s, got '%s'\n", backend_choices().c_str(), base.device.c_str());
    return 2;
  }
  if (models.empty()) {
    for (const char* m : {"resnet18", "resnet50", "mobilenet_v2", "efficientnet_lite0", "branch_merge",
                          "bert_base_layer", "minilm_l6", "multitask_heads", "transformer_block"}) {
      models.push_back(std::string(FUSERT_SOURCE_DIR) + "/models/" + m + ".yaml");
    }
  }
  print_header(base, runs);
  int failures = 0;
  for (const std::string& m : models) {
    Status st = bench_model(m, runs, base);
    if (!st.ok()) {
      std::fprintf(stderr, "bench: %s: %s\n", m.c_str(), st.to_string().c_str());
      ++failures;
    }
  }
  return failures ? 1 : 0;
}
