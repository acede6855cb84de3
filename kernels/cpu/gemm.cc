// ONNX Gemm and batched MatMul on row-major buffers through Eigen maps. Eigen does the blocking
// and threads the product itself under OpenMP; these wrappers handle layout, C and batching.
#include <algorithm>
#include <cassert>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/eigen_maps.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::ConstMatrixMap;
using detail::MatrixMap;

// y[i,j] = beta * C[i or 0, j or 0]: C is unidirectionally broadcast from [c_rows, c_cols].
void fill_scaled_c(const GemmParams& p, const float* c, float* y) {
  assert((p.c_rows == 1 || p.c_rows == p.m) && (p.c_cols == 1 || p.c_cols == p.n));
  for (int64_t i = 0; i < p.m; ++i) {
    const float* c_row = c + (p.c_rows == 1 ? 0 : i * p.c_cols);
    float* y_row = y + i * p.n;
    if (p.c_cols == 1) {
      std::fill(y_row, y_row + p.n, p.beta * c_row[0]);
    } else {
      for (int64_t j = 0; j < p.n; ++j) y_row[j] = p.beta * c_row[j];
    }
  }
}

// Keeping alpha and the transposes inside one expression lets Eigen fold them into its GEMM
// kernel instead of materialising op(A), op(B) or alpha * product.
template <class OpA, class OpB>
void multiply_into(MatrixMap& y, const OpA& a, const OpB& b, float alpha, bool accumulate) {
  if (accumulate) {
    y.noalias() += alpha * a * b;
  } else {
    y.noalias() = alpha * a * b;
  }
}

// One [M,K] x [K,N] product into y (overwritten); K == 0 gives zeros.
void plain_matmul(int64_t m, int64_t n, int64_t k, const float* a, const float* b, float* y) {
  MatrixMap y_map(y, m, n);
  if (k == 0) {
    y_map.setZero();
    return;
  }
  y_map.noalias() = ConstMatrixMap(a, m, k) * ConstMatrixMap(b, k, n);
}

// When every output batch uses the same B and A's batches are laid out in order, the batched
// product is one [batch*M, K] x [K, N] GEMM, which Eigen blocks and threads far better.
bool folds_into_one_gemm(const MatMulParams& p) {
  for (int64_t i = 0; i < p.batch; ++i) {
    if (!p.a_batch_index.empty() && p.a_batch_index[i] != i) return false;
    const int64_t b_first = p.b_batch_index.empty() ? 0 : p.b_batch_index[0];
    const int64_t b_this = p.b_batch_index.empty() ? i : p.b_batch_index[i];
    if (b_this != b_first) return false;
  }
  return true;
}

// Small products do not thread well inside Eigen, so whole batches go to the team instead;
// large ones keep a team of 1 here and let Eigen thread each product. (Inside an OpenMP
// region Eigen runs single-threaded, so the two never oversubscribe.)
int batch_team(const MatMulParams& p) {
  const int64_t macs = p.m * p.n * std::max<int64_t>(p.k, 1);
  if (macs >= (int64_t{1} << 18)) return 1;
  return static_cast<int>(std::min<int64_t>(p.batch, detail::team_size(macs * p.batch)));
}

}  // namespace

void gemm(const GemmParams& p, const float* a, const float* b, const float* c, float* y) {
  if (p.m <= 0 || p.n <= 0) return;
  MatrixMap y_map(y, p.m, p.n);
  // beta == 0 ignores C entirely (as ONNX Runtime does), so a NaN in C cannot leak through.
  const bool use_c = c != nullptr && p.beta != 0.f;
  if (use_c) fill_scaled_c(p, c, y);
  if (p.k <= 0) {
    if (!use_c) y_map.setZero();
    return;
  }
  const ConstMatrixMap a_map(a, p.trans_a ? p.k : p.m, p.trans_a ? p.m : p.k);
  const ConstMatrixMap b_map(b, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n);
  if (!p.trans_a && !p.trans_b) {
    multiply_into(y_map, a_map, b_map, p.alpha, use_c);
  } else if (!p.trans_a) {
    multiply_into(y_map, a_map, b_map.transpose(), p.alpha, use_c);
  } else if (!p.trans_b) {
    multiply_into(y_map, a_map.transpose(), b_map, p.alpha, use_c);
  } else {
    multiply_into(y_map, a_map.transpose(), b_map.transpose(), p.alpha, use_c);
  }
}

void matmul(const MatMulParams& p, const float* a, const float* b, float* y) {
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  assert(p.a_batch_index.empty() || static_cast<int64_t>(p.a_batch_index.size()) == p.batch);
  assert(p.b_batch_index.empty() || static_cast<int64_t>(p.b_batch_index.size()) == p.batch);
  if (folds_into_one_gemm(p)) {
    const int64_t b_src = p.b_batch_index.empty() ? 0 : p.b_batch_index[0];
    plain_matmul(p.batch * p.m, p.n, p.k, a, b + b_src * p.k * p.n, y);
    return;
  }
  const int team = batch_team(p);
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
  for (int64_t i = 0; i < p.batch; ++i) {
    const int64_t ai = p.a_batch_index.empty() ? i : p.a_batch_index[i];
    const int64_t bi = p.b_batch_index.empty() ? i : p.b_batch_index[i];
    plain_matmul(p.m, p.n, p.k, a + ai * p.m * p.k, b + bi * p.k * p.n, y + i * p.m * p.n);
  }
}

}  // namespace fusert::cpu
