// Host kernels of the data-dependent ops (kernels/cpu/data_dependent.h).
#include "kernels/cpu/data_dependent.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/cpu/index_kernels.h"

namespace fusert::cpu {

namespace {

// Element i of x as a double (f32, i32, i64, bool), for comparisons.
double at(const Tensor& x, int64_t i) {
  switch (x.dtype()) {
    case DType::kF32:
      return x.f32()[i];
    case DType::kI64:
      return static_cast<double>(x.i64()[i]);
    case DType::kI32:
      return static_cast<const int32_t*>(x.raw())[i];
    default:
      return static_cast<const uint8_t*>(x.raw())[i];
  }
}

ElemType elem_type(DType t) {
  switch (t) {
    case DType::kI32:
      return ElemType::kI32;
    case DType::kI64:
      return ElemType::kI64;
    case DType::kBool:
      return ElemType::kBool;
    default:
      return ElemType::kF32;
  }
}

struct Box {
  float y1, x1, y2, x2;
  float area() const { return (y2 - y1) * (x2 - x1); }
};

Box box_at(const float* b, bool center) {
  if (center) {
    const float xc = b[0], yc = b[1], w = b[2] / 2, h = b[3] / 2;
    return {yc - h, xc - w, yc + h, xc + w};
  }
  return {std::min(b[0], b[2]), std::min(b[1], b[3]), std::max(b[0], b[2]), std::max(b[1], b[3])};
}

bool suppresses(const Box& a, const Box& b, float iou_threshold) {
  const float ih = std::min(a.y2, b.y2) - std::max(a.y1, b.y1), iw = std::min(a.x2, b.x2) - std::max(a.x1, b.x1);
  if (ih <= 0 || iw <= 0) return false;
  const float inter = ih * iw, ua = a.area(), ub = b.area();
  if (ua <= 0 || ub <= 0) return false;
  const float uni = ua + ub - inter;
  return uni > 0 && inter / uni > iou_threshold;
}

}  // namespace

Tensor non_zero(const Tensor& x) {
  const Shape& s = x.shape();
  const int64_t n = x.numel(), r = static_cast<int64_t>(s.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < n; ++i)
    if (at(x, i) != 0) hits.push_back(i);
  const int64_t cnt = static_cast<int64_t>(hits.size());
  Tensor y(DType::kI64, {r, cnt});
  for (int64_t j = 0; j < cnt; ++j) {
    int64_t rest = hits[static_cast<size_t>(j)];
    for (int64_t d = r - 1; d >= 0; --d) {
      y.i64()[d * cnt + j] = rest % s[static_cast<size_t>(d)];
      rest /= s[static_cast<size_t>(d)];
    }
  }
  return y;
}

Tensor non_max_suppression(const Tensor& boxes, const Tensor& scores, const NmsParams& p) {
  const int64_t batches = boxes.shape()[0], nbox = boxes.shape()[1], classes = scores.shape()[1];
  std::vector<int64_t> sel;  // (batch, class, box) triples
  std::vector<int64_t> order;
  std::vector<Box> kept;
  for (int64_t b = 0; b < batches && p.max_per_class > 0; ++b) {
    const float* bx = boxes.f32() + b * nbox * 4;
    for (int64_t c = 0; c < classes; ++c) {
      const float* sc = scores.f32() + (b * classes + c) * nbox;
      order.clear();
      for (int64_t i = 0; i < nbox; ++i)
        if (!p.has_score_threshold || sc[i] > p.score_threshold) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [sc](int64_t a, int64_t z) {  // a NaN score last
        return !std::isnan(sc[a]) && (std::isnan(sc[z]) || sc[a] > sc[z]);
      });
      kept.clear();
      int64_t taken = 0;
      for (int64_t i : order) {
        if (taken >= p.max_per_class) break;
        const Box cand = box_at(bx + i * 4, p.center_point_box);
        bool drop = false;
        for (const Box& k : kept) drop = drop || suppresses(k, cand, p.iou_threshold);
        if (drop) continue;
        kept.push_back(cand);
        sel.insert(sel.end(), {b, c, i});
        ++taken;
      }
    }
  }
  Tensor y(DType::kI64, {static_cast<int64_t>(sel.size() / 3), 3});
  if (!sel.empty()) std::memcpy(y.raw(), sel.data(), sel.size() * sizeof(int64_t));
  return y;
}

UniqueResult unique(const Tensor& x, int64_t axis, bool sorted) {
  const Shape& s = x.shape();
  const AxisView v = axis < 0 ? AxisView{1, x.numel(), 1} : axis_view_of(s, axis);
  // slice l: the elements (o, l, i) for every o, i, in that order
  auto elem = [&](int64_t l, int64_t k) { return at(x, (k / v.inner) * v.len * v.inner + l * v.inner + k % v.inner); };
  const int64_t width = v.outer * v.inner;
  auto less = [&](int64_t a, int64_t b) {  // NaN after every number, all NaNs one value (numpy's order)
    for (int64_t k = 0; k < width; ++k) {
      const double ea = elem(a, k), eb = elem(b, k);
      const bool na = std::isnan(ea), nb = std::isnan(eb);
      if (na || nb) {
        if (na != nb) return nb;
        continue;
      }
      if (ea != eb) return ea < eb;
    }
    return false;
  };
  std::vector<int64_t> first;  // first occurrence of each distinct slice, in occurrence order
  std::vector<int64_t> inverse_first(static_cast<size_t>(v.len));
  std::vector<int64_t> by_value(static_cast<size_t>(v.len));
  std::iota(by_value.begin(), by_value.end(), 0);
  std::stable_sort(by_value.begin(), by_value.end(), less);
  std::vector<int64_t> group(static_cast<size_t>(v.len));  // slice -> its group's first slice
  for (size_t i = 0; i < by_value.size(); ++i) {
    const bool fresh = i == 0 || less(by_value[i - 1], by_value[i]);
    group[static_cast<size_t>(by_value[i])] = fresh ? by_value[i] : group[static_cast<size_t>(by_value[i - 1])];
  }
  std::vector<int64_t> out_of(static_cast<size_t>(v.len), -1);  // first slice -> output position
  std::vector<int64_t> reps;                                    // output position -> first slice
  if (sorted) {
    for (int64_t l : by_value) {
      if (group[static_cast<size_t>(l)] != l) continue;
      out_of[static_cast<size_t>(l)] = static_cast<int64_t>(reps.size());
      reps.push_back(l);
    }
  } else {
    for (int64_t l = 0; l < v.len; ++l) {
      if (group[static_cast<size_t>(l)] != l) continue;
      out_of[static_cast<size_t>(l)] = static_cast<int64_t>(reps.size());
      reps.push_back(l);
    }
  }
  const int64_t n = static_cast<int64_t>(reps.size());
  UniqueResult r;
  Shape ys = axis < 0 ? Shape{n} : s;
  if (axis >= 0) ys[static_cast<size_t>(axis)] = n;
  r.y = Tensor(x.dtype(), ys);
  r.indices = Tensor(DType::kI64, {n});
  r.inverse = Tensor(DType::kI64, {v.len});
  r.counts = Tensor(DType::kI64, {n});
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(r.y.raw());
  for (int64_t j = 0; j < n; ++j) {
    const int64_t l = reps[static_cast<size_t>(j)];
    r.indices.i64()[j] = l;
    r.counts.i64()[j] = 0;
    for (int64_t o = 0; o < v.outer; ++o)
      std::memcpy(dst + ((o * n + j) * v.inner) * es, src + ((o * v.len + l) * v.inner) * es,
                  static_cast<size_t>(v.inner) * es);
  }
  for (int64_t l = 0; l < v.len; ++l) {
    const int64_t j = out_of[static_cast<size_t>(group[static_cast<size_t>(l)])];
    r.inverse.i64()[l] = j;
    ++r.counts.i64()[j];
  }
  return r;
}

Tensor compress(const Tensor& x, const Tensor& condition, int64_t axis) {
  const AxisView v = axis < 0 ? AxisView{1, x.numel(), 1} : axis_view_of(x.shape(), axis);
  const auto* c = static_cast<const uint8_t*>(condition.raw());
  const int64_t clen = std::min(condition.numel(), v.len);
  std::vector<int64_t> keep;
  for (int64_t l = 0; l < clen; ++l)
    if (c[l]) keep.push_back(l);
  const int64_t n = static_cast<int64_t>(keep.size());
  Shape ys = axis < 0 ? Shape{n} : x.shape();
  if (axis >= 0) ys[static_cast<size_t>(axis)] = n;
  Tensor y(x.dtype(), ys);
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t j = 0; j < n; ++j) {
      std::memcpy(dst + ((o * n + j) * v.inner) * es, src + ((o * v.len + keep[static_cast<size_t>(j)]) * v.inner) * es,
                  static_cast<size_t>(v.inner) * es);
    }
  }
  return y;
}

Tensor slice_axis(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  const AxisView v = axis_view_of(x.shape(), axis);
  const int64_t d = v.len;
  auto clamp = [d](int64_t e, int64_t lo, int64_t hi) { return std::min(std::max(e < 0 ? e + d : e, lo), hi); };
  const int64_t b = step > 0 ? clamp(start, 0, d) : clamp(start, 0, d - 1);
  const int64_t e = step > 0 ? clamp(end, 0, d) : clamp(end, -1, d - 1);
  const uint64_t span = static_cast<uint64_t>(step > 0 ? e - b : b - e);  // > 0 where not empty; |step| unsigned:
  const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : 0 - static_cast<uint64_t>(step);  // INT64_MIN
  const int64_t n = (step > 0 ? e > b : b > e) ? static_cast<int64_t>((span - 1) / stride + 1) : 0;
  Shape ys = x.shape();
  ys[static_cast<size_t>(axis)] = n;
  Tensor y(x.dtype(), ys);
  const size_t es = dtype_size(x.dtype()), row = static_cast<size_t>(v.inner) * es;
  const auto* src = static_cast<const uint8_t*>(x.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  for (int64_t o = 0; o < v.outer; ++o)
    for (int64_t j = 0; j < n; ++j)
      std::memcpy(dst + static_cast<size_t>(o * n + j) * row, src + static_cast<size_t>(o * d + b + j * step) * row,
                  row);
  return y;
}

void top_k_tensor(const Tensor& x, int64_t axis, int64_t k, bool largest, Tensor* values, Tensor* indices) {
  Shape ys = x.shape();
  ys[static_cast<size_t>(axis)] = k;
  *values = Tensor(x.dtype(), ys);
  *indices = Tensor(DType::kI64, ys);
  if (k == 0) return;
  top_k(axis_view_of(x.shape(), axis), k, largest, elem_type(x.dtype()), x.raw(), values->raw(), indices->i64());
}

}  // namespace fusert::cpu
