// The differential planner fuzzer's checks of one model file (fuzz_check.h): the modes, the
// tolerances from the conditioning probe, bf16, a symbolic batch and a zero-size batch.
#include "tests/fuzz_planner/fuzz_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "kernels/cpu/onednn.h"
#ifdef FUSERT_FUZZ_EMU
#include "tests/cuda_emu/emu.h"
#endif

namespace fusert::fuzz {

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

Counts g_counts;

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

Result<std::unique_ptr<Session>> open(const std::string& path, const Mode* m, int threads, uint64_t jitter) {
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
  {
    std::ifstream f(path);
    std::string first;
    std::getline(f, first);
    if (first.find(", family qdq") != std::string::npos)
      return check_qdq_model(path, threads, first.find("power-of-two scales") != std::string::npos);
  }
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

}  // namespace fusert::fuzz
