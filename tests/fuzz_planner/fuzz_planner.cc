// fuzz_planner: the differential planner fuzzer. For each generated graph (graph_gen.h) it runs
// every fusion mode on seeded weights and inputs and compares every graph output with the
// graph as written (`--fusion raw`: the CPU reference kernels, one per node): relative L2 <= 1e-5 over
// the finite elements and NaN/Inf in the same places. A failing graph is shrunk (motifs dropped
// while it still fails) and written as a YAML file with its seed, ready to be a regression test.
// Each graph runs in a child process, so a crash or a sanitizer abort is a failure of that
// graph (and shrinks like one) instead of the end of the run. Each graph is also given a zero-size
// batch (unfused, and planned at another batch with its symbolic dim): fusert's dims are >= 1, so
// the run must fail with an error naming the input, never crash or return.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "kernels/cpu/onednn.h"
#include "runtime/session.h"
#include "tests/fuzz_planner/graph_gen.h"
#ifdef FUSERT_FUZZ_EMU
#include "tests/cuda_emu/emu.h"
#endif

namespace fs = std::filesystem;
using namespace fusert;

namespace {

struct Mode {
  const char* name;
  const char* fusion;
  bool profile = false;
  const char* plan_for = "";
  const char* device = "cpu";
  const char* cpu_kernels = "onednn";
  bool all_blocks = false;
  const char* precision = "f32";
};

// `raw` (the graph as written, one kernel per node, no canonicalisation) is the reference: each
// mode is compared with `raw` on the same CPU kernels (oneDNN anchors by default, or our
// reference kernels), and `raw` on oneDNN with `raw` on the reference kernels
// (kCrossKernelFactor looser: oneDNN's eltwise approximations and blocked accumulation order
// differ from libm and our loops by a few ulps, which a normalisation can amplify). `none`, the
// canonicalised unfused baseline, is one of the modes checked.
const std::vector<Mode> kModes = {
    {"all (reference kernels)", "all", false, "", "cpu", "reference"},
    {"all (reference kernels, every 1x1+depthwise block)", "all", false, "", "cpu", "reference", true},
    {"none", "none"},
    {"vertical", "vertical"},
    {"horizontal", "horizontal"},
    {"cross", "cross"},
    {"compound", "compound"},
    {"all", "all"},
    {"profile-guided", "all", true},
    {"all (cuda plan)", "all", false, "cuda"},
#ifdef FUSERT_FUZZ_EMU
    // The CUDA backend linked against tests/cuda_emu: real lowering, executor and library calls,
    // generated kernels run as their host references, allocations bounds-checked.
    {"cuda-emu raw", "raw", false, "", "cuda"},
    {"cuda-emu all", "all", false, "", "cuda"},
#endif
};

constexpr double kTolerance = 1e-5;
constexpr double kCrossKernelFactor = 10;
// Fused modes on oneDNN: post-ops compute Tanh, Sigmoid, GELU, Exp with oneDNN's polynomial
// approximations (a few ulps from libm), the unfused ops with libm; a LayerNorm over a few
// near-equal values amplifies that beyond what the ulp-jitter conditioning probe measures.
constexpr double kOneDnnFactor = 4;

struct Options {
  uint64_t seed = 1;
  int64_t graphs = 100;
  int threads = 0;  // 0: 1 or 2, alternating by seed
  std::string out = "fuzz-failures";
  std::vector<std::string> replay;
  int max_failures = 5;
  bool fork_each = true;
  bool shrink = true;
  bool print = false;
};

std::string scratch_path() {
  static const std::string p =
      (fs::temp_directory_path() / ("fuzz_planner_" + std::to_string(::getpid()) + ".yaml")).string();
  return p;
}

double rel_l2(const Tensor& a, const Tensor& b) {
  double diff = 0, norm = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.f32()[i], y = b.f32()[i];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    diff += (x - y) * (x - y);
    norm += x * x;
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Per output, the tolerance: 1e-5 relative L2, widened only for an output whose own float32
// conditioning is worse: 10x its change when every input, every weight and every op's output
// moves by ~2e-7 relative (a few ulps), the size of the reassociation differences a fused kernel may
// legitimately make at each op (a tiny value after cancellation amplifies them).
// Outputs with a noise floor above kUnjudged are too ill-conditioned to tell a bug from
// rounding; they are counted, not compared.
constexpr double kUnjudged = 1e-3;

struct Counts {
  int64_t outputs = 0, widened = 0, unjudged = 0;
  int64_t blocks = 0;    ///< 1x1+depthwise groups formed (coverage of the block fusion)
  int64_t symbolic = 0;  ///< graphs also run planned at another batch (symbolic dim)
  int64_t zero = 0;      ///< runs given a zero-size batch (each must fail with an error naming the input)
};
Counts g_counts;  // of the current process (a child reports its own through the pipe)

std::map<std::string, double> tolerances(const TensorMap& want, const std::vector<TensorMap>& noisy) {
  std::map<std::string, double> tol;
  for (const auto& [name, w] : want) {
    double change = 0;
    for (const TensorMap& n : noisy) change = std::max(change, rel_l2(w, n.at(name)));
    tol[name] = std::max(kTolerance, 10 * change);
    ++g_counts.outputs;
    g_counts.widened += tol[name] > kTolerance && tol[name] <= kUnjudged;
    g_counts.unjudged += tol[name] > kUnjudged;
  }
  return tol;
}

// Compares `got` with `want`; empty when they agree.
std::string compare(const TensorMap& want, const TensorMap& got, const std::map<std::string, double>& tol) {
  std::ostringstream why;
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "output '" + name + "' missing";
    const Tensor& g = it->second;
    if (g.shape() != w.shape())
      return "output '" + name + "' shape " + shape_str(g.shape()) + " != " + shape_str(w.shape());
    double max_abs = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const float a = w.f32()[i], b = g.f32()[i];
      if (std::isnan(a) != std::isnan(b) || (std::isinf(a) && a != b) || (std::isinf(b) && a != b)) {
        why << "output '" << name << "' element " << i << ": " << b << " where the unfused plan has " << a;
        return why.str();
      }
      if (std::isfinite(a)) max_abs = std::max(max_abs, std::fabs(static_cast<double>(a) - b));
    }
    const double t = tol.at(name);
    if (t > kUnjudged) continue;
    const double rel = rel_l2(w, g);
    if (!(rel <= t)) {
      why << "output '" << name << "' " << shape_str(w.shape()) << ": relative L2 " << rel << " > " << t
          << " (max abs diff " << max_abs << ")";
      return why.str();
    }
  }
  return "";
}

// Moves every element of an f32 tensor by up to 2^-22 relative, in place.
void jitter(Tensor& t, uint64_t* state) {
  if (t.dtype() != DType::kF32) return;
  for (int64_t i = 0; i < t.numel(); ++i) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    const double u = static_cast<double>(*state >> 11) * 0x1.0p-53 * 2 - 1;
    t.f32()[i] = static_cast<float>(t.f32()[i] * (1 + u * 0x1.0p-22));
  }
}

TensorMap perturbed(const TensorMap& in, uint64_t* state) {
  TensorMap out;
  for (const auto& [name, t] : in) {
    Tensor c = t.clone();
    jitter(c, state);
    out.emplace(name, std::move(c));
  }
  return out;
}

Result<std::unique_ptr<Session>> open(const std::string& path, const Mode* m, int threads, uint64_t jitter = 0) {
  SessionOptions o;
  o.jitter_steps = jitter;
  o.seeded = true;
  o.threads = threads;
  o.fusion = m ? m->fusion : "raw";
  o.cpu_kernels = m ? m->cpu_kernels : "reference";
  if (m) o.profile_guided = m->profile, o.plan_for = m->plan_for, o.device = m->device;
  if (m) o.all_blocks = m->all_blocks, o.precision = m->precision;
  return Session::load(path, o);
}

// The model with the leading dim of its inputs of rank >= 2 that share the first input's
// leading size made a symbolic dim `batch` planned at another value (models/FORMAT.md,
// "Symbolic dimensions"); empty when the first input has rank < 2.
std::string symbolic_batch_variant(const std::string& yaml) {
  const std::string key = ", shape: [";
  size_t at = yaml.find("inputs:\n");
  if (at == std::string::npos) return "";
  size_t first = yaml.find(key, at);
  if (first == std::string::npos) return "";
  const size_t lead_end = yaml.find_first_of(",]", first + key.size());
  const std::string lead = yaml.substr(first + key.size(), lead_end - first - key.size());
  if (yaml[lead_end] != ',') return "";  // rank 1: no batch
  const int64_t b = std::stoll(lead), opt = b == 1 ? 3 : 1;
  std::string out = yaml.substr(0, at) + "dims: {batch: {min: 1, max: " + std::to_string(std::max<int64_t>(4, b)) +
                    ", opt: " + std::to_string(opt) + "}}\n";
  size_t end_inputs = yaml.find("outputs:", at);
  std::string inputs = yaml.substr(at, end_inputs - at);
  for (size_t p = inputs.find(key); p != std::string::npos; p = inputs.find(key, p + 1)) {
    const size_t e = inputs.find_first_of(",]", p + key.size());
    if (inputs[e] == ',' && inputs.substr(p + key.size(), e - p - key.size()) == lead)
      inputs.replace(p + key.size(), e - p - key.size(), "batch");
  }
  return out + inputs + yaml.substr(end_inputs);
}

// Zero-size dims: `in` with the leading dim of its first input (the batch) made 0. fusert's dims
// are >= 1, so the run must fail with an error that names the input, never crash or return.
std::string check_zero_batch(Session& s, const TensorMap& in, const char* mode) {
  if (in.empty()) return "";
  TensorMap zero = in;
  const std::string name = s.graph().value(s.graph().inputs[0]).name;
  Shape shape = zero.at(name).shape();
  if (shape.empty()) return "";
  shape[0] = 0;
  zero[name] = Tensor(zero.at(name).dtype(), shape);
  ++g_counts.zero;
  auto got = s.run(zero);
  if (got.ok()) return std::string(mode) + ": a zero-size batch ran (" + shape_str(shape) + ") instead of an error";
  if (got.status().message().find(name) == std::string::npos)
    return std::string(mode) + ": the zero-size batch's error does not name input '" + name +
           "': " + got.status().to_string();
  return "";
}

// The symbolic-batch variant planned (fusion all, oneDNN) at another batch and run at the
// generated shape: the per-shape instance of a plan made elsewhere must agree with raw. A
// variant that does not load (a shape that only holds at the generated batch, e.g. a
// broadcast operand) is skipped.
std::string check_symbolic(const std::string& path, int threads, const TensorMap& in, const TensorMap& want,
                           const std::map<std::string, double>& tol) {
  std::ifstream f(path);
  std::stringstream text;
  text << f.rdbuf();
  const std::string yaml = symbolic_batch_variant(text.str());
  if (yaml.empty()) return "";
  const std::string sym_path = path + ".batch.yaml";
  {
    std::ofstream o(sym_path);
    o << yaml;
  }
  const Mode m = {"all (planned at another batch)", "all"};
  auto s = open(sym_path, &m, threads);
  std::remove(sym_path.c_str());
  if (!s.ok()) return "";
  ++g_counts.symbolic;
  for (int rep = 0; rep < 2; ++rep) {
    auto got = (*s)->run(in);
    if (!got.ok()) return std::string(m.name) + ": run failed: " + got.status().to_string();
    std::string why = compare(want, *got, tol);
    if (!why.empty()) return std::string(m.name) + (rep ? " (second run)" : "") + ": " + why;
  }
  // One miss: the batch. A staged graph (NonZero, NMS) may miss once more per later stage (its count).
  const int64_t misses = (*s)->stats().shape_cache_misses, stages = (*s)->stats().execution_stages;
  if (misses < 1 || misses > stages) return std::string(m.name) + ": expected one shape-cache miss per stage at most";
  return check_zero_batch(**s, in, m.name);
}

// --precision bf16 (where the CPU has native bf16): `none` in bf16 against raw in f32 within
// bf16's rounding (kBf16Bound), and `all` in bf16 against `none` in bf16, which round the same
// canonicalised weights and anchor inputs: only an f32 rounding difference that moves an anchor
// input across a bf16 rounding boundary separates them (kBf16Factor over the f32 tolerance).
// Not for graphs with a data-dependent count, whose output sizes move with the rounding.
constexpr double kBf16Factor = 256, kBf16Bound = 5e-2;
const bool g_bf16 = cpu::onednn::bf16_native();

std::string check_bf16(const std::string& path, int threads, const TensorMap& in, const TensorMap& want_f32,
                       const std::map<std::string, double>& dnn_tol) {
  if (!g_bf16) return "";
  const Mode none = {"none (bf16)", "none", false, "", "cpu", "onednn", false, "bf16"};
  const Mode all = {"all (bf16)", "all", false, "", "cpu", "onednn", false, "bf16"};
  auto sn = open(path, &none, threads);
  if (!sn.ok()) return std::string(none.name) + ": load failed: " + sn.status().to_string();
  if ((*sn)->stats().execution_stages > 1) return "";  // a count (NonZero, NMS) moves with bf16's rounding
  auto base = (*sn)->run(in);
  if (!base.ok()) return std::string(none.name) + ": run failed: " + base.status().to_string();
  std::map<std::string, double> loose = dnn_tol, tight = dnn_tol;
  for (auto& kv : loose) kv.second = std::max(kv.second * (1 << 14), kBf16Bound);
  for (auto& kv : tight) kv.second *= kBf16Factor;
  std::string why = compare(want_f32, *base, loose);
  if (!why.empty()) return std::string(none.name) + " against raw (f32): " + why;
  auto sa = open(path, &all, threads);
  if (!sa.ok()) return std::string(all.name) + ": load failed: " + sa.status().to_string();
  for (int rep = 0; rep < 2; ++rep) {
    auto got = (*sa)->run(in);
    if (!got.ok()) return std::string(all.name) + ": run failed: " + got.status().to_string();
    why = compare(*base, *got, tight);
    if (!why.empty()) return std::string(all.name) + (rep ? " (second run)" : "") + " against none (bf16): " + why;
  }
  return "";
}

// Runs every mode on the model at `path`; empty when all agree, else what failed first.
std::string check_model(const std::string& path, int threads) {
  auto ref = open(path, nullptr, threads);
  if (!ref.ok()) return "fusion raw: load failed: " + ref.status().to_string();
  TensorMap in = (*ref)->seeded_inputs(7);
  auto want = (*ref)->run(in);
  if (!want.ok()) return "fusion raw: run failed: " + want.status().to_string();
  if (std::string zero = check_zero_batch(**ref, in, "fusion raw"); !zero.empty()) return zero;
  // The conditioning probe: another unfused session whose weights (shared buffers the unfused
  // kernels read at run time), inputs and every op's output are jittered by a few ulps
  // (SessionOptions::jitter_steps): an op that rounds to the same float for a slightly moved
  // input (a saturated Sigmoid, tanh near -1) still shows how far its own rounding carries.
  // Twice, with two seeds, the larger change counting: one draw can move two elements a
  // cancellation subtracts nearly alike (seed 2345628: a LayerNorm over rows of 2).
  std::vector<TensorMap> noisy;
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    auto probe = open(path, nullptr, threads, seed);
    if (!probe.ok()) return "fusion raw: load failed: " + probe.status().to_string();
    if ((*probe)->stats().execution_stages > 1) {  // a count (NonZero, NMS) moves with any jitter: the
      noisy.push_back(*want);                      // outputs' shapes would differ; the base tolerance holds
      continue;
    }
    uint64_t state = 0x9E3779B97F4A7C15ull * seed;
    for (const Value& v : (*probe)->graph().values) {
      if (v.is_initializer && !v.data.empty()) jitter(const_cast<Tensor&>(v.data), &state);
    }
    auto out = (*probe)->run(perturbed(in, &state));
    if (!out.ok()) return "fusion raw: run failed: " + out.status().to_string();
    noisy.push_back(std::move(*out));
  }
  const std::map<std::string, double> tol = tolerances(*want, noisy);
  const Mode dnn_none = {"raw (onednn)", "raw"};
  auto dnn = open(path, &dnn_none, threads);
  if (!dnn.ok()) return "fusion raw (onednn): load failed: " + dnn.status().to_string();
  auto want_dnn = (*dnn)->run(in);
  if (!want_dnn.ok()) return "fusion raw (onednn): run failed: " + want_dnn.status().to_string();
  std::map<std::string, double> cross_tol = tol, dnn_tol = tol;
  for (auto& kv : cross_tol) kv.second *= kCrossKernelFactor;
  for (auto& kv : dnn_tol) kv.second *= kOneDnnFactor;
  const std::string cross = compare(*want, *want_dnn, cross_tol);
  if (!cross.empty()) return "raw (onednn) against raw (reference kernels): " + cross;
  for (const Mode& m : kModes) {
#ifdef FUSERT_FUZZ_EMU
    emu::clear_violations();
#endif
    auto s = open(path, &m, threads);
    if (!s.ok()) return std::string(m.name) + ": load failed: " + s.status().to_string();
    for (const FusionGroup* grp : (*s)->fusion_plan().kernel_groups())
      g_counts.blocks += grp->kind == GroupKind::kPointwiseDepthwise ? 1 : 0;
    for (int rep = 0; rep < 2; ++rep) {  // twice: a stale or uninitialised buffer shows on the second run
      auto got = (*s)->run(in);
      if (!got.ok()) return std::string(m.name) + ": run failed: " + got.status().to_string();
      const bool reference = std::string(m.cpu_kernels) == "reference" || std::string(m.device) != "cpu";
      std::string why = compare(reference ? *want : *want_dnn, *got, reference ? tol : dnn_tol);
      if (!why.empty()) return std::string(m.name) + (rep ? " (second run)" : "") + ": " + why;
    }
#ifdef FUSERT_FUZZ_EMU
    if (!emu::violations().empty()) return std::string(m.name) + ": emulation violation: " + emu::violations()[0];
#endif
  }
  if (std::string bf16 = check_bf16(path, threads, in, *want_dnn, dnn_tol); !bf16.empty()) return bf16;
  return check_symbolic(path, threads, in, *want_dnn, dnn_tol);
}

// check_model in a child process: a crash becomes a failure text instead of ending the run.
std::string check_isolated(const std::string& yaml, int threads, bool fork_each) {
  {
    std::ofstream f(scratch_path());
    f << yaml;
  }
  if (!fork_each) return check_model(scratch_path(), threads);
  const Counts before = g_counts;
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = check_model(scratch_path(), threads);
    // "#counts o w u\n" first, then the failure text (empty when the graph passed).
    why = "#counts " + std::to_string(g_counts.outputs - before.outputs) + " " +
          std::to_string(g_counts.widened - before.widened) + " " +
          std::to_string(g_counts.unjudged - before.unjudged) + " " + std::to_string(g_counts.blocks - before.blocks) +
          " " + std::to_string(g_counts.symbolic - before.symbolic) + " " +
          std::to_string(g_counts.zero - before.zero) + "\n" + why;
    ssize_t n = write(fds[1], why.data(), why.size());
    (void)n;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string why;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (why.rfind("#counts ", 0) == 0) {
    std::istringstream head(why.substr(8, why.find('\n') - 8));
    Counts c;
    head >> c.outputs >> c.widened >> c.unjudged >> c.blocks >> c.symbolic >> c.zero;
    g_counts.outputs += c.outputs, g_counts.widened += c.widened, g_counts.unjudged += c.unjudged;
    g_counts.blocks += c.blocks;
    g_counts.symbolic += c.symbolic;
    g_counts.zero += c.zero;
    why = why.substr(why.find('\n') + 1);
  }
  if (WIFSIGNALED(status))
    return "crashed with signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
  return why;
}

int threads_for(const Options& o, uint64_t seed) { return o.threads > 0 ? o.threads : 1 + static_cast<int>(seed % 2); }

// Drops motifs one at a time while the graph still fails; returns the smallest failing graph.
fuzz::GenGraph shrink(const Options& o, uint64_t seed, std::string* why) {
  std::set<int> skip;
  fuzz::GenGraph best = fuzz::generate(seed, skip);
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < static_cast<int>(best.motifs.size()); ++i) {
      if (skip.count(i)) continue;
      std::set<int> trial = skip;
      trial.insert(i);
      fuzz::GenGraph g = fuzz::generate(seed, trial);
      std::string w = check_isolated(g.yaml, threads_for(o, seed), o.fork_each);
      if (!w.empty()) {
        skip = trial, best = g, *why = w, progress = true;
      }
    }
  }
  return best;
}

void write_failure(const Options& o, uint64_t seed, const fuzz::GenGraph& g, const std::string& why) {
  fs::create_directories(o.out);
  std::string path = o.out + "/fuzz_" + std::to_string(seed) + ".yaml";
  std::ofstream f(path);
  f << "# failure: " << why << "\n# threads: " << threads_for(o, seed) << "\n" << g.yaml;
  std::cout << "  written: " << path << " (" << g.nodes << " nodes)\n";
}

int run_replay(const Options& o) {
  int failed = 0, passed = 0;
  std::vector<std::string> files;
  for (const std::string& p : o.replay) {
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".yaml") files.push_back(e.path().string());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    for (int threads : {1, 2}) {
      std::string why = check_isolated(text.str(), threads, o.fork_each);
      if (why.empty()) {
        ++passed;
      } else {
        ++failed;
        std::cout << "FAIL " << f << " (threads " << threads << "): " << why << "\n";
      }
    }
  }
  std::cout << "fuzz_planner replay: " << files.size() << " regression graphs x 2 thread counts; outputs "
            << g_counts.outputs << " (" << g_counts.widened << " with a tolerance widened by their conditioning, "
            << g_counts.unjudged << " too ill-conditioned to judge)\n"
            << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

void usage() {
  std::cout << "fuzz_planner [--graphs N] [--seed S] [--threads T] [--out DIR] [--max-failures K]\n"
               "             [--no-fork] [--no-shrink] [--print] [--replay FILE_OR_DIR ...]\n"
               "  Generates N random graphs (seeds S .. S+N-1), runs every fusion mode (none, vertical,\n"
               "  horizontal, cross, compound, all, profile-guided, all with the CUDA plan on CPU\n"
               "  kernels) and compares every output with --fusion raw (relative L2 <= 1e-5, NaN/Inf\n"
               "  in the same places). Failures are shrunk and written to DIR (default fuzz-failures).\n"
               "  --print writes the YAML of seed S and exits; --replay checks existing YAML files.\n";
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--graphs")
      o->graphs = std::stoll(next());
    else if (a == "--seed")
      o->seed = std::stoull(next());
    else if (a == "--threads")
      o->threads = std::stoi(next());
    else if (a == "--out")
      o->out = next();
    else if (a == "--max-failures")
      o->max_failures = std::stoi(next());
    else if (a == "--no-fork")
      o->fork_each = false;
    else if (a == "--no-shrink")
      o->shrink = false;
    else if (a == "--print")
      o->print = true;
    else if (a == "--replay") {
      while (i + 1 < argc && argv[i + 1][0] != '-') o->replay.push_back(argv[++i]);
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      throw std::runtime_error("unknown argument '" + a + "'");
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Passive OpenMP waits: with spinning workers, forked children and a second fuzzer on the
  // other core slow each other down tenfold.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  Options o;
  try {
    parse(argc, argv, &o);
  } catch (const std::exception& e) {
    std::cerr << "fuzz_planner: " << e.what() << " (--help)\n";
    return 2;
  }
  if (o.print) {
    std::cout << fuzz::generate(o.seed).yaml;
    return 0;
  }
  if (!o.replay.empty()) return run_replay(o);
  auto t0 = std::chrono::steady_clock::now();
  int64_t passed = 0, failed = 0, nodes = 0;
  for (int64_t i = 0; i < o.graphs; ++i) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(i);
    fuzz::GenGraph g = fuzz::generate(seed);
    nodes += g.nodes;
    std::string why = check_isolated(g.yaml, threads_for(o, seed), o.fork_each);
    if (why.empty()) {
      ++passed;
    } else {
      ++failed;
      std::cout << "FAIL seed " << seed << " (" << g.family << ", " << g.nodes << " nodes): " << why << "\n";
      fuzz::GenGraph small = g;
      if (o.shrink) small = shrink(o, seed, &why);
      std::cout << "  shrunk: " << why << "\n";
      write_failure(o, seed, small, why);
      if (failed >= o.max_failures) break;
    }
    if ((i + 1) % 1000 == 0) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << "[fuzz_planner] " << (i + 1) << " graphs, " << failed << " failed, " << s << " s\n" << std::flush;
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "fuzz_planner: seeds " << o.seed << ".." << (o.seed + static_cast<uint64_t>(passed + failed) - 1) << ", "
            << nodes << " nodes, " << kModes.size() << " fused modes each, " << s << " s; outputs " << g_counts.outputs
            << " (" << g_counts.widened << " with a tolerance widened by their conditioning, " << g_counts.unjudged
            << " too ill-conditioned to judge); 1x1+depthwise groups formed: " << g_counts.blocks
            << "; run planned at another batch: " << g_counts.symbolic
            << " graphs; zero-size batches refused: " << g_counts.zero
            << (g_bf16 ? "; bf16 modes (none, all) checked" : "; bf16 modes skipped (no native bf16 on this CPU)")
            << "\n"
            << passed << " passed, " << failed << " failed\n";
  std::remove(scratch_path().c_str());
  return failed ? 1 : 0;
}
