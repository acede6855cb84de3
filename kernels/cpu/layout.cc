// Data movement: Transpose (rank <= 6) and Concat. Transpose first merges output dims that
// stay adjacent in the input, so most real permutations become a few long strided loops.
#include <cassert>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

constexpr int kMaxRank = 6;

// Output dims (in output order) with the input stride each one walks.
struct StridedView {
  int64_t dims[kMaxRank];
  int64_t strides[kMaxRank];
};

// Drops size-1 dims, merges output dim i into i-1 when the input walks them as one run
// (stride[i-1] == stride[i] * dims[i]), and left-pads to kMaxRank with size-1 dims.
StridedView plan_transpose(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm) {
  const size_t rank = in_shape.size();
  std::vector<int64_t> in_stride(rank, 1);
  for (size_t d = rank; d-- > 1;) in_stride[d - 1] = in_stride[d] * in_shape[d];
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t dim = in_shape[perm[i]], stride = in_stride[perm[i]];
    if (dim == 1) continue;
    if (!dims.empty() && strides.back() == stride * dim) {
      dims.back() *= dim;
      strides.back() = stride;
    } else {
      dims.push_back(dim);
      strides.push_back(stride);
    }
  }
  StridedView view;
  const size_t pad = kMaxRank - dims.size();
  for (size_t i = 0; i < static_cast<size_t>(kMaxRank); ++i) {
    view.dims[i] = i < pad ? 1 : dims[i - pad];
    view.strides[i] = i < pad ? 0 : strides[i - pad];
  }
  return view;
}

// Copies one output row (the last dim) whose outer index is `row`.
void transpose_row(const StridedView& v, int64_t row, const float* x, float* y) {
  int64_t offset = 0;
  for (int d = kMaxRank - 2; d >= 0; --d) {
    offset += (row % v.dims[d]) * v.strides[d];
    row /= v.dims[d];
  }
  const float* src = x + offset;
  const int64_t len = v.dims[kMaxRank - 1], stride = v.strides[kMaxRank - 1];
  if (stride == 1) {
    std::memcpy(y, src, static_cast<size_t>(len) * sizeof(float));
  } else {
    for (int64_t i = 0; i < len; ++i) y[i] = src[i * stride];
  }
}

}  // namespace

void transpose(const std::vector<int64_t>& in_shape, const std::vector<int64_t>& perm, const float* x, float* y) {
  assert(in_shape.size() == perm.size() && in_shape.size() <= static_cast<size_t>(kMaxRank));
  int64_t total = 1;
  for (int64_t d : in_shape) total *= d;
  if (total == 0) return;
  const StridedView view = plan_transpose(in_shape, perm);
  const int64_t len = view.dims[kMaxRank - 1], rows = total / len;
  const int team = detail::team_size(total);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) transpose_row(view, r, x, y + r * len);
}

void concat(int64_t outer, int64_t inner, const std::vector<int64_t>& lens, const std::vector<const float*>& xs,
            float* y) {
  assert(lens.size() == xs.size());
  int64_t out_row = 0;
  for (int64_t len : lens) out_row += len * inner;
  if (outer <= 0 || out_row == 0) return;
  const int team = detail::team_size(outer * out_row);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t o = 0; o < outer; ++o) {
    float* dst = y + o * out_row;
    for (size_t i = 0; i < xs.size(); ++i) {
      const int64_t n = lens[i] * inner;
      if (n > 0) std::memcpy(dst, xs[i] + o * n, static_cast<size_t>(n) * sizeof(float));
      dst += n;
    }
  }
}

}  // namespace fusert::cpu
