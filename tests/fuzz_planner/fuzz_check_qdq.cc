// The planner fuzzer's check of a QDQ network (graph_gen.h qdq_graph). Every value between kernels
// is 8-bit and every kernel on it computes ONNX Runtime's integer arithmetic, so each fusion mode,
// each kernel set (oneDNN's int8 convolution with its requantisation in the epilogue or in our pass,
// the reference QLinearConv) and bf16 must give the same bits as `none` on the reference kernels. The
// rewrites themselves are checked against the graph as written (`raw`: DequantizeLinear, Conv and
// QuantizeLinear in f32). Its f32 sums round, so an output just beside a .5 may move by a quantum,
// and later layers carry that: kRawBound (in practice the first 3,000 seeds' QDQ networks all equal
// raw to the bit: power-of-two scales make raw's products exact, others rarely land that near a tie).
#include <string>

#include "graph/ir.h"
#include "graph/op.h"
#include "tests/fuzz_planner/fuzz_check.h"

namespace fusert::fuzz {
namespace {

constexpr double kRawBound = 2e-2;

// The canonical graph's first Conv, Add or MaxPool on f32 (a QDQ pattern no rewrite took: qdq_maxpool
// leaves an 8-bit MaxPool); "" when none.
std::string float_left(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op == OpKind::kConv || n.op == OpKind::kAdd ||
        (n.op == OpKind::kMaxPool && g.value(n.inputs[0]).dtype == DType::kF32))
      return std::string(op_name(n.op)) + " '" + n.name + "'";
  return "";
}

std::map<std::string, double> bounds(const TensorMap& outputs, double bound) {
  std::map<std::string, double> tol;
  for (const auto& kv : outputs) tol[kv.first] = bound;
  return tol;
}

}  // namespace

std::string check_qdq_model(const std::string& path, int threads) {
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
  if (std::string why = compare(*want_raw, *want, bounds(*want, kRawBound)); !why.empty())
    return std::string(base_mode.name) + " against raw: " + why;
  ++g_counts.qdq;
  const std::map<std::string, double> exact = bounds(*want, 0);
  std::vector<Mode> modes = kModes;
  if (g_bf16) {  // bf16 applies to float anchors only: none here
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
