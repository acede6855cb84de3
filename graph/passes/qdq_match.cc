// Matching helpers of the QDQ rewrites (graph/passes/qdq_match.h).
#include "graph/passes/qdq_match.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/base/quant_math.h"

#include "graph/passes/graph_edit.h"
#include "graph/passes/match_util.h"

namespace fusert::qdq {

const Value* constant(const Graph& g, ValueId v) { return fixed_data(g, v) ? &g.value(v) : nullptr; }

bool usable_scales(const Tensor& s) {
  if (s.dtype() != DType::kF32) return false;
  for (int64_t i = 0; i < s.numel(); ++i)
    if (!std::isfinite(s.f32()[i]) || s.f32()[i] == 0.f) return false;
  return true;
}

bool per_tensor(const Graph& g, const Node& n) {
  const Value* s = constant(g, n.inputs[1]);
  const Value* z = n.inputs.size() > 2 ? constant(g, n.inputs[2]) : nullptr;
  return s && s->data.numel() == 1 && usable_scales(s->data) && (n.inputs.size() < 3 || (z && z->data.numel() == 1));
}

const Node* dq_of(const Graph& g, ValueId v) {
  const int p = match::producer(g, v, OpKind::kDequantizeLinear);
  return p < 0 ? nullptr : &g.nodes[static_cast<size_t>(p)];
}

bool activation(const Graph& g, const Node& a, double* lo, double* hi) {
  *lo = -std::numeric_limits<float>::max();
  *hi = std::numeric_limits<float>::max();
  if (a.op == OpKind::kRelu) {
    *lo = 0;
    return true;
  }
  if (a.op != OpKind::kClip) return false;
  *lo = a.attr_f("min");
  *hi = a.attr_f("max");
  for (size_t i : {size_t{1}, size_t{2}}) {
    if (i >= a.inputs.size() || a.inputs[i] == kNoValue) continue;
    const Value* c = constant(g, a.inputs[i]);
    if (!c || c->data.numel() != 1 || c->data.dtype() != DType::kF32) return false;
    (i == 1 ? *lo : *hi) = c->data.f32()[0];
  }
  if (std::isnan(*lo) || std::isnan(*hi)) return false;
  if (*lo > *hi) *lo = *hi;  // ONNX Clip: min > max gives max everywhere
  return true;
}

int quantised_producer(const Graph& g, int q, OpKind op, double* lo, double* hi, std::vector<int>* erased) {
  const Node& qn = g.nodes[static_cast<size_t>(q)];
  *lo = -std::numeric_limits<float>::max();
  *hi = std::numeric_limits<float>::max();
  if (qn.op != OpKind::kQuantizeLinear || !per_tensor(g, qn) || qn.inputs.size() < 3) return -1;
  int p = g.value(qn.inputs[0]).producer;
  if (p < 0 || match::sole_consumer(g, qn.inputs[0]) != q) return -1;
  if (g.nodes[static_cast<size_t>(p)].op != op) {
    const Node& a = g.nodes[static_cast<size_t>(p)];
    if (!activation(g, a, lo, hi)) return -1;
    const int act = p;
    p = match::producer(g, a.inputs[0], op);
    if (p < 0 || match::sole_consumer(g, a.inputs[0]) != act) return -1;
    erased->push_back(act);
  }
  erased->push_back(p);
  return p;
}

bool ort_drops_activation(const Graph& g, const Node& q, const Node& act) {
  const Value* z = q.inputs.size() > 2 ? constant(g, q.inputs[2]) : nullptr;
  const Value* s = constant(g, q.inputs[1]);
  if (!z || !s || z->data.numel() != 1 || s->data.numel() != 1) return false;
  const bool s8 = z->data.dtype() == DType::kI8;
  const int32_t zp = static_cast<int32_t>(quant::value_at(z->data, 0)), qmin = s8 ? -128 : 0, qmax = s8 ? 127 : 255;
  if (act.op == OpKind::kRelu) return zp == qmin;
  double lo, hi;
  if (!activation(g, act, &lo, &hi)) return false;
  const float scale = s->data.f32()[0], lower = scale * static_cast<float>(qmin - zp),
              upper = scale * static_cast<float>(qmax - zp), eps = std::numeric_limits<float>::epsilon();
  return !(eps < static_cast<float>(lo) - lower) && !(eps < upper - static_cast<float>(hi));
}

int quantised_anchor(const Graph& g, int q, OpKind op, std::vector<int>* erased) {
  double lo, hi;
  const size_t before = erased->size();
  const int p = quantised_producer(g, q, op, &lo, &hi, erased);
  if (p < 0) return -1;
  const bool with_activation = erased->size() - before == 2;  // the activation first, then the anchor
  if (with_activation &&
      !ort_drops_activation(g, g.nodes[static_cast<size_t>(q)], g.nodes[static_cast<size_t>((*erased)[before])])) {
    erased->resize(before);
    return -1;
  }
  return p;
}

bool ort_types(DType x, DType w, DType y) { return x == y && (x != DType::kI8 || w == DType::kI8); }

ValueId int_bias(const Graph& g, const Node& dqb, float sx, const Tensor& sw) {
  const Value* b = constant(g, dqb.inputs[0]);
  const Value* s = constant(g, dqb.inputs[1]);
  if (!b || b->data.dtype() != DType::kI32 || !s || s->data.dtype() != DType::kF32) return kNoValue;
  if (s->data.numel() != b->data.numel() && s->data.numel() != 1) return kNoValue;
  if (dqb.inputs.size() > 2) {
    const Value* z = constant(g, dqb.inputs[2]);
    if (!z) return kNoValue;
    for (int64_t i = 0; i < z->data.numel(); ++i)
      if (quant::value_at(z->data, i) != 0) return kNoValue;
  }
  for (int64_t c = 0; c < b->data.numel(); ++c) {
    const double want = static_cast<double>(sx) * sw.f32()[sw.numel() == 1 ? 0 : c];  // within an f32 rounding:
    if (std::fabs(s->data.f32()[s->data.numel() == 1 ? 0 : c] - want) > 1e-6 * std::fabs(want))  // writers round
      return kNoValue;                                                                           // differently
  }
  return dqb.inputs[0];
}

bool fits_int32(const Graph& g, const Node& dqx, const Tensor& w, const Tensor& zw, ValueId bias) {
  const Value* zx = constant(g, dqx.inputs[2]);
  const bool s8 = g.value(dqx.inputs[0]).dtype == DType::kI8;
  const double z = quant::value_at(zx->data, 0),
               x_max = std::max(std::fabs((s8 ? -128 : 0) - z), std::fabs((s8 ? 127 : 255) - z));
  const int64_t m = w.shape()[0], k = w.numel() / std::max<int64_t>(m, 1);
  const Value* b = bias == kNoValue ? nullptr : constant(g, bias);
  for (int64_t c = 0; c < m; ++c) {
    const double wz = quant::value_at(zw, zw.numel() == 1 ? 0 : c);
    double sum = 0;
    for (int64_t i = 0; i < k; ++i) sum += std::fabs(quant::value_at(w, c * k + i) - wz);
    const double bc = b ? std::fabs(static_cast<double>(quant::value_at(b->data, c))) : 0.0;
    if (sum * x_max + bc >= 2147483647.0) return false;
  }
  return true;
}

}  // namespace fusert::qdq
