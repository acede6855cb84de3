// The planner fuzzer's check of a QDQ network (graph_gen.h qdq_graph). Every value between kernels
// is 8-bit and every kernel on it computes ONNX Runtime's integer arithmetic, so each fusion mode,
// each kernel set (oneDNN's int8 convolution with its requantisation in the epilogue or in our pass,
// the reference QLinearConv) and bf16 must give the same bits as `none` on the reference kernels. The
// rewrites themselves are checked against the graph as written (`raw`: DequantizeLinear, Conv, Add
// and QuantizeLinear in f32, the ONNX operators taken literally). The integer kernels round the way
// ONNX Runtime does, which differs from that at a tie (QLinearAdd adds an odd zero point before the
// rounding, quantize.cc) or next to one, and later layers carry such a quantum. An output's quantum
// is the smallest gap between two of its values (they are multiples of the output's scale). With
// scales drawn at random a tie is rare: no element may be more than kRawQuanta away and at most
// kRawShare of them more than 1.5 quanta. With power-of-two scales ties are everywhere (11% of an
// output's elements moved, 6 quanta at most, in the first 3,000 seeds): only kRawQuantaPow2 holds.
// A rewrite that maps a pattern wrong (a scale, a zero point, the bias, the clamp) is off by more: a
// QLinearAdd with B's zero point taken from A fails 48 of the first 80 QDQ seeds.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/ir.h"
#include "graph/op.h"
#include "tests/fuzz_planner/fuzz_check.h"

namespace fusert::fuzz {
namespace {

constexpr double kRawQuanta = 2.5, kRawShare = 0.05, kRawQuantaPow2 = 8;

// The canonical graph's first Conv, Add, Gemm (but one of alpha 0.5, which qdq_gemm refuses) or MaxPool
// on f32 (a QDQ pattern no rewrite took: qdq_maxpool leaves an 8-bit MaxPool); "" when none.
std::string float_left(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::kConv || n.op == OpKind::kAdd || (n.op == OpKind::kGemm && n.attr_f("alpha") == 1.0) ||
        (n.op == OpKind::kMaxPool && g.value(n.inputs[0]).dtype == DType::kF32))
      return std::string(op_name(n.op)) + " '" + n.name + "'";
  return "";
}

// True when an anchor of the canonical graph computes on f32 (a Gemm of alpha 0.5, which qdq_gemm
// refuses): bf16 would round it, so the bf16 modes are not equal to the bit there.
bool float_anchor(const Graph& g) {
  for (const Node& n : g.nodes)
    if (op_info(n.op).pattern == PatternKind::kAnchor && g.value(n.inputs[0]).dtype == DType::kF32) return true;
  return false;
}

// The smallest gap between two distinct finite values of `t` (its quantum); infinity when it has fewer
// than two.
double quantum(const Tensor& t) {
  std::vector<float> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    if (std::isfinite(t.f32()[i])) v.push_back(t.f32()[i]);
  std::sort(v.begin(), v.end());
  double q = INFINITY;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[i - 1]) q = std::min(q, static_cast<double>(v[i]) - v[i - 1]);
  return q;
}

// raw against the integer plan, output by output (see the file comment); empty when they agree.
std::string compare_raw(const TensorMap& raw, const TensorMap& got, bool pow2) {
  for (const auto& [name, r] : raw) {
    const Tensor& g = got.at(name);
    if (g.shape() != r.shape()) return "output '" + name + "': shape " + shape_str(g.shape());
    const double q = quantum(r);
    double max_abs = 0;
    int64_t off = 0;  // elements more than 1.5 quanta away
    for (int64_t i = 0; i < r.numel(); ++i) {
      const double d = std::fabs(static_cast<double>(r.f32()[i]) - g.f32()[i]);
      max_abs = std::max(max_abs, d);
      off += d > 1.5 * q;
    }
    const bool far =
        pow2 ? max_abs > kRawQuantaPow2 * q
             : max_abs > kRawQuanta * q || static_cast<double>(off) > kRawShare * static_cast<double>(r.numel());
    if (far)
      return "output '" + name + "' " + shape_str(r.shape()) + ": " + std::to_string(off) + " of " +
             std::to_string(r.numel()) + " elements more than 1.5 quanta away, the farthest " +
             std::to_string(max_abs / q) + " quanta (the quantum " + std::to_string(q) + ")";
  }
  return "";
}

std::map<std::string, double> bounds(const TensorMap& outputs, double bound) {
  std::map<std::string, double> tol;
  for (const auto& kv : outputs) tol[kv.first] = bound;
  return tol;
}

}  // namespace

std::string check_qdq_model(const std::string& path, int threads, bool pow2) {
  auto raw = open(path, nullptr, threads);
  if (!raw.ok()) return "fusion raw: load failed: " + raw.status().to_string();
  const TensorMap in = (*raw)->seeded_inputs(7);
  auto want_raw = (*raw)->run(in);
  if (!want_raw.ok()) return "fusion raw: run failed: " + want_raw.status().to_string();
  if (std::string zero = check_zero_batch(**raw, in, "fusion raw"); !zero.empty()) return zero;
  const Mode base_mode = {"none (reference kernels)", "none", false, "", "cpu", "reference"};
  auto base = open(path, &base_mode, threads);
  if (!base.ok()) return std::string(base_mode.name) + ": load failed: " + base.status().to_string();
  if (std::string left = float_left((*base)->graph()); !left.empty())
    return std::string(base_mode.name) + ": " + left + " stayed in float (no QDQ rewrite took it)";
  auto want = (*base)->run(in);
  if (!want.ok()) return std::string(base_mode.name) + ": run failed: " + want.status().to_string();
  if (std::string why = compare_raw(*want_raw, *want, pow2); !why.empty())
    return std::string(base_mode.name) + " against raw: " + why;
  ++g_counts.qdq;
  const std::map<std::string, double> exact = bounds(*want, 0);
  std::vector<Mode> modes = kModes;
  if (g_bf16 && !float_anchor((*base)->graph())) {  // bf16 applies to float anchors only
    modes.push_back({"none (bf16)", "none", false, "", "cpu", "onednn", false, "bf16"});
    modes.push_back({"all (bf16)", "all", false, "", "cpu", "onednn", false, "bf16"});
  }
  for (const Mode& m : modes) {
    if (std::string(m.fusion) == "raw") continue;  // f32 arithmetic, checked above
    auto s = open(path, &m, threads);
    if (!s.ok()) return std::string(m.name) + ": load failed: " + s.status().to_string();
    for (int rep = 0; rep < 2; ++rep) {  // twice: a stale or uninitialised buffer shows on the second run
      auto got = (*s)->run(in);
      if (!got.ok()) return std::string(m.name) + ": run failed: " + got.status().to_string();
      std::string why = compare(*want, *got, exact);
      if (!why.empty())
        return std::string(m.name) + (rep ? " (second run)" : "") + " against " + base_mode.name + ": " + why;
    }
  }
  return check_symbolic(path, threads, in, *want, exact);
}

}  // namespace fusert::fuzz
