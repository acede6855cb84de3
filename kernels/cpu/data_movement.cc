// kernels/cpu/data_movement.h: one innermost output row at a time, threaded over rows.
#include "kernels/cpu/data_movement.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/cpu/parallel.h"

namespace fusert::cpu {

namespace {

template <typename T>
void fill_as(uint8_t* dst, const uint8_t* v, int64_t count) {
  T u;
  std::memcpy(&u, v, sizeof u);
  for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * static_cast<int64_t>(sizeof u), &u, sizeof u);
}

// `count` copies of the element at v.
void fill(uint8_t* dst, const uint8_t* v, int64_t count, size_t es) {
  switch (es) {
    case 1:
      std::memset(dst, *v, static_cast<size_t>(count));
      return;
    case 2:
      return fill_as<uint16_t>(dst, v, count);
    case 4:
      return fill_as<uint32_t>(dst, v, count);
    case 8:
      return fill_as<uint64_t>(dst, v, count);
    default:
      for (int64_t i = 0; i < count; ++i) std::memcpy(dst + i * static_cast<int64_t>(es), v, es);
  }
}

// Calls f(row, coord) for every row of `dims` (all dims but the last; coord is the row's index
// over them), threaded when the output (`bytes`) is large enough.
template <class F>
void for_each_row(const Shape& dims, int64_t bytes, F f) {
  const size_t outer_rank = dims.size() - 1;
  int64_t rows = 1;
  for (size_t d = 0; d < outer_rank; ++d) rows *= dims[d];
  const int team = detail::team_size(bytes / 4);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<int64_t> coord(outer_rank);
#pragma omp for schedule(static)
    for (int64_t row = 0; row < rows; ++row) {
      int64_t rem = row;
      for (size_t d = outer_rank; d-- > 0;) {
        coord[d] = rem % dims[d];
        rem /= dims[d];
      }
      f(row, coord);
    }
  }
}

// Row-major element strides of `s`.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

bool has_zero(const Shape& s) { return std::find(s.begin(), s.end(), 0) != s.end(); }

}  // namespace

void expand_rows(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y) {
  if (has_zero(ys)) return;
  // Merge neighbouring output dims that x broadcasts alike (both read, or both repeated): a
  // per-channel expand is rows of one repeated value, a batch expand rows of one memcpy.
  const size_t r = ys.size();
  Shape xp(r, 1);
  for (size_t k = 0; k < xs.size(); ++k) xp[r - 1 - k] = xs[xs.size() - 1 - k];
  Shape dims;
  std::vector<bool> read;
  for (size_t d = 0; d < r; ++d) {
    if (ys[d] == 1) continue;
    const bool rd = xp[d] != 1;
    if (!dims.empty() && read.back() == rd) {
      dims.back() *= ys[d];
    } else {
      dims.push_back(ys[d]);
      read.push_back(rd);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    read.push_back(true);
  }
  std::vector<int64_t> st(dims.size(), 0);  // x's element stride per merged dim, 0 where repeated
  int64_t acc = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (!read[d]) continue;
    st[d] = acc;
    acc *= dims[d];
  }
  const int64_t inner = dims.back(), es = static_cast<int64_t>(esize);
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  for_each_row(dims, shape_numel(ys) * es, [&](int64_t row, const std::vector<int64_t>& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] * st[d];
    uint8_t* out = dst + row * inner * es;
    if (read.back()) {
      std::memcpy(out, src + off * es, static_cast<size_t>(inner * es));
    } else {
      fill(out, src + off * es, inner, esize);
    }
  });
}

void tile_rows(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y) {
  if (has_zero(ys)) return;
  const Shape dims = ys.empty() ? Shape{1} : ys, xd = xs.empty() ? Shape{1} : xs;
  const std::vector<int64_t> st = strides_of(xd);
  const int64_t inner = dims.back(), xin = xd.back(), es = static_cast<int64_t>(esize);
  const auto* src = static_cast<const uint8_t*>(x);
  auto* dst = static_cast<uint8_t*>(y);
  for_each_row(dims, shape_numel(ys) * es, [&](int64_t row, const std::vector<int64_t>& c) {
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) off += c[d] % xd[d] * st[d];
    uint8_t* out = dst + row * inner * es;
    if (xin == 1) {
      fill(out, src + off * es, inner, esize);
      return;
    }
    for (int64_t k = 0; k < inner; k += xin) std::memcpy(out + k * es, src + off * es, static_cast<size_t>(xin * es));
  });
}

void pad_rows(const Shape& xs, const std::vector<int64_t>& pads, int mode, const void* value, size_t esize,
              const void* x, void* y) {
  const size_t r = xs.size();
  if (r == 0) {
    std::memcpy(y, x, esize);
    return;
  }
  Shape ys = xs;
  for (size_t d = 0; d < r; ++d) ys[d] += pads[d] + pads[d + r];
  if (has_zero(ys)) return;
  const std::vector<int64_t> st = strides_of(xs);
  const int64_t es = static_cast<int64_t>(esize), n = xs[r - 1], ow = ys[r - 1];
  const int64_t left = pads[r - 1], right = pads[2 * r - 1];
  const auto* src = static_cast<const uint8_t*>(x);
  const auto* val = static_cast<const uint8_t*>(value);
  auto* dst = static_cast<uint8_t*>(y);
  // Index into x for output index o of a dim of size `len` with begin pad `b` (reflect without
  // repeating the edge, edge by clamping), or -1 (constant: the value).
  auto source = [mode](int64_t o, int64_t b, int64_t len) -> int64_t {
    const int64_t j = o - b;
    if (j >= 0 && j < len) return j;
    if (mode == 0) return -1;
    if (mode == 1) return j < 0 ? -j : 2 * (len - 1) - j;
    return j < 0 ? 0 : len - 1;
  };
  for_each_row(ys, shape_numel(ys) * es, [&](int64_t row, const std::vector<int64_t>& c) {
    uint8_t* out = dst + row * ow * es;
    int64_t off = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      const int64_t j = source(c[d], pads[d], xs[d]);
      if (j < 0) {
        fill(out, val, ow, esize);
        return;
      }
      off += j * st[d];
    }
    const uint8_t* in = src + off * es;
    for (int64_t o = 0; o < left; ++o) {
      const int64_t j = source(o, left, n);
      std::memcpy(out + o * es, j < 0 ? val : in + j * es, esize);
    }
    std::memcpy(out + left * es, in, static_cast<size_t>(n * es));
    for (int64_t o = left + n; o < left + n + right; ++o) {
      const int64_t j = source(o, left, n);
      std::memcpy(out + o * es, j < 0 ? val : in + j * es, esize);
    }
  });
}

void transpose_bytes(const Shape& xs, const std::vector<int64_t>& perm, const uint8_t* x, uint8_t* y) {
  const size_t r = xs.size();
  std::vector<int64_t> in_stride(r, 1), ys(r), step(r);  // step[k]: x's stride of y's dim k
  for (size_t d = r; d-- > 1;) in_stride[d - 1] = in_stride[d] * xs[d];
  for (size_t k = 0; k < r; ++k) {
    ys[k] = xs[static_cast<size_t>(perm[k])];
    step[k] = in_stride[static_cast<size_t>(perm[k])];
  }
  const int64_t n = shape_numel(xs);
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    y[i] = x[off];
    for (size_t k = r; k-- > 0;) {  // the odometer over y's dims
      off += step[k];
      if (++idx[k] < ys[k]) break;
      off -= step[k] * ys[k];
      idx[k] = 0;
    }
  }
}

}  // namespace fusert::cpu
