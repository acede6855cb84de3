// Cost model formulas (see cost_model.h for the contract of each).
#include "graph/fusion/cost_model.h"

#include <algorithm>
#include <cstdio>
#include <set>

namespace fusert {

int64_t value_bytes(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return shape_numel(val.shape) * static_cast<int64_t>(dtype_size(val.dtype));
}

int64_t node_flops(const Graph& g, int ni) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  const Shape& y = g.value(n.outputs[0]).shape;
  switch (n.op) {
    case OpKind::kConv: {
      const Shape& w = g.value(n.inputs[1]).shape;
      return 2 * shape_numel(y) * w[1] * w[2] * w[3];
    }
    case OpKind::kConvInteger:
    case OpKind::kQLinearConv: {  // an integer multiply-add counts as a FLOP pair too
      const Shape& w = g.value(n.inputs[n.op == OpKind::kQLinearConv ? 3 : 1]).shape;
      int64_t taps = 1;
      for (size_t i = 1; i < w.size(); ++i) taps *= w[i];
      return 2 * shape_numel(y) * taps;
    }
    case OpKind::kConvTranspose: {  // each input element paints (M / group) * KH * KW outputs
      const Shape& x = g.value(n.inputs[0]).shape;
      const Shape& w = g.value(n.inputs[1]).shape;
      return 2 * shape_numel(x) * w[1] * w[2] * w[3];
    }
    case OpKind::kGemm: {
      const Shape& a = g.value(n.inputs[0]).shape;
      int64_t k = n.attr_i("transA") ? a[0] : a[1];
      return 2 * shape_numel(y) * k;
    }
    case OpKind::kMatMul:
    case OpKind::kMatMulInteger: {
      const Shape& a = g.value(n.inputs[0]).shape;
      return 2 * shape_numel(y) * a.back();
    }
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_FLOPS_##Row(Name, Flops)
#define FUSERT_UNARY_FLOPS_0(Name, Flops)
#define FUSERT_UNARY_FLOPS_1(Name, Flops) \
  case OpKind::k##Name:                   \
    return Flops * shape_numel(y);
#define FUSERT_UNARY_FLOPS_2(Name, Flops)
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_FLOPS_0
#undef FUSERT_UNARY_FLOPS_1
#undef FUSERT_UNARY_FLOPS_2
    case OpKind::kGelu:
    case OpKind::kSoftmax:
    case OpKind::kLayerNormalization:
    case OpKind::kPow:
      return 8 * shape_numel(y);
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kUnsqueeze:
    case OpKind::kIdentity:
      return 0;
    default:
      return shape_numel(y);
  }
}

double roofline_ms(const Roofline& r, double flops, double bytes) {
  return 1e3 * std::max(flops / r.peak_flops, bytes / r.bytes_per_s);
}

FusionDecision check_balancing_pays(const FusionOptions& o, int64_t extra_flops, int64_t bytes_saved,
                                    int launches_saved) {
  double cost = roofline_ms(o.roofline, static_cast<double>(extra_flops), 0);
  double gain =
      roofline_ms(o.roofline, 0, static_cast<double>(bytes_saved)) + launches_saved * o.roofline.launch_us / 1e3;
  if (cost <= gain) return FusionDecision::yes();
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "balancing by zero-padding adds %.1f MFLOP (+%.3f ms) for %.2f MiB less traffic (-%.3f ms) on %s",
                static_cast<double>(extra_flops) / 1e6, cost, static_cast<double>(bytes_saved) / 1048576.0, gain,
                o.backend.c_str());
  return FusionDecision::no("balancing_cost", buf);
}

int register_estimate(const Graph& g, const std::vector<int>& nodes) {
  int regs = 0;
  for (int ni : nodes) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    PatternKind p = op_info(n.op).pattern;
    if (p == PatternKind::kAnchor) {
      regs += 24;  // accumulator tile of the GEMM/conv micro-kernel
      continue;
    }
    bool tensor_operand = false;
    for (size_t i = 1; i < n.inputs.size(); ++i)
      tensor_operand |= n.inputs[i] != kNoValue && !g.value(n.inputs[i]).is_constant;
    switch (n.op) {
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_REGS_##Row(Name, Regs)
#define FUSERT_UNARY_REGS_0(Name, Regs)
#define FUSERT_UNARY_REGS_1(Name, Regs) \
  case OpKind::k##Name:                 \
    regs += Regs;                       \
    break;
#define FUSERT_UNARY_REGS_2 FUSERT_UNARY_REGS_1
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_REGS_0
#undef FUSERT_UNARY_REGS_1
#undef FUSERT_UNARY_REGS_2
      case OpKind::kLayerNormalization:
      case OpKind::kSoftmax:
      case OpKind::kGlobalAveragePool:
        regs += 10;
        break;
      default:
        regs += 2;
        break;
    }
    if (tensor_operand) regs += 4;  // operand pointer, index and loaded value
  }
  return regs;
}

const char* pressure_class(int depth) { return depth <= 2 ? "low" : depth <= 4 ? "medium" : "high"; }

int64_t bytes_saved(const Graph& g, const std::vector<int>& nodes, const std::vector<ValueId>& outputs) {
  std::set<int> members(nodes.begin(), nodes.end());
  std::set<ValueId> written(outputs.begin(), outputs.end());
  int64_t saved = 0;
  for (int ni : nodes) {
    for (ValueId v : g.nodes[static_cast<size_t>(ni)].outputs) {
      if (written.count(v)) continue;
      const Value& val = g.value(v);
      saved += value_bytes(g, v) * (1 + static_cast<int64_t>(val.consumers.size()));
    }
  }
  return saved;
}

double imbalance_ratio(int64_t a, int64_t b) {
  int64_t lo = std::max<int64_t>(std::min(a, b), 1), hi = std::max(a, b);
  return static_cast<double>(hi) / static_cast<double>(lo);
}

FusionDecision check_imbalance(double ratio, double max_ratio, const std::string& what) {
  if (ratio <= max_ratio) return FusionDecision::yes();
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s branch FLOP ratio %.1f > %.1f", what.c_str(), ratio, max_ratio);
  return FusionDecision::no("imbalance", buf);
}

int64_t peak_live_bytes(const Graph& g, const std::vector<ValueId>& early, const std::vector<int>& early_at) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int64_t> delta(static_cast<size_t>(n) + 2, 0);
  for (size_t vi = 0; vi < g.values.size(); ++vi) {
    const Value& v = g.values[vi];
    if (v.is_initializer) continue;
    int birth = v.producer >= 0 ? v.producer : 0;
    auto it = std::find(early.begin(), early.end(), static_cast<ValueId>(vi));
    if (it != early.end()) birth = std::min(birth, early_at[static_cast<size_t>(it - early.begin())]);
    int death = v.is_graph_output ? n - 1 : birth;
    for (int c : v.consumers) death = std::max(death, c);
    int64_t bytes = value_bytes(g, static_cast<ValueId>(vi));
    delta[static_cast<size_t>(birth)] += bytes;
    delta[static_cast<size_t>(death) + 1] -= bytes;
  }
  int64_t live = 0, peak = 0;
  for (int i = 0; i <= n; ++i) {
    live += delta[static_cast<size_t>(i)];
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace fusert
