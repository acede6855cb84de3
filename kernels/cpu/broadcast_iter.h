// The odometer the element-wise reference kernels share (internal to kernels/cpu): every output
// element in row-major order with each operand's offset kept (stride 0 on a broadcast dim)
// instead of divided out per element.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/base/tensor.h"

namespace fusert::cpu {

// Element strides of operand shape `s` (padded to the output's rank), 0 on broadcast dims.
inline std::vector<int64_t> operand_strides(const Shape& s, const Shape& out) {
  std::vector<int64_t> st(s.size(), 0);
  int64_t acc = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = (s[d] == 1 && out[d] != 1) ? 0 : acc;
    acc *= s[d];
  }
  return st;
}

// Calls f(k, offs) for every output element k in row-major order; offs[j] is operand j's offset.
template <typename F>
void for_each_broadcast(const Shape& out, const std::vector<Shape>& shapes, F f) {
  const size_t r = out.size(), m = shapes.size();
  std::vector<std::vector<int64_t>> st;
  for (const Shape& s : shapes) st.push_back(operand_strides(s, out));
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  std::vector<int64_t> coord(r, 0), off(m, 0);
  for (int64_t k = 0; k < total; ++k) {
    f(k, off);
    for (size_t d = r; d-- > 0;) {
      for (size_t j = 0; j < m; ++j) off[j] += st[j][d];
      if (++coord[d] < out[d]) break;
      for (size_t j = 0; j < m; ++j) off[j] -= st[j][d] * out[d];
      coord[d] = 0;
    }
  }
}

}  // namespace fusert::cpu
