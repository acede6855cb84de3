// GEMM anchors with epilogues: gemm_fused, matmul_fused, and the horizontal groups (one GEMM on
// concatenated weights; a grouped launch over same-shape GEMMs). Work is cut into row blocks
// so a LayerNorm tail sees complete rows and each block is finished while it is in L2.
#include <algorithm>
#include <cassert>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace detail {

// Every block repacks B (Eigen packs both operands per call), which costs about 1/rows of the
// block's multiply-adds, so blocks are as tall as L2 allows: the block just written is then
// still in L2 when its epilogue runs. Rows are multiples of 16 for the micro-kernel (32-row
// blocks measured ~10% slower than one whole GEMM); fewer only to give every thread a block.
int64_t gemm_row_block(int64_t m, int64_t n, int64_t /*k*/) {
  constexpr int64_t kMinRows = 64, kAlign = 16;
  const int64_t budget = std::max<int64_t>(64 * 1024, Eigen::l2CacheSize() / static_cast<int64_t>(sizeof(float)));
  int64_t rows = std::max(kMinRows, budget / std::max<int64_t>(n, 1) / kAlign * kAlign);
  const int64_t threads = num_threads();
  const int64_t per_thread = ((m + threads - 1) / threads + kAlign - 1) / kAlign * kAlign;
  if (per_thread < rows) rows = std::max(kAlign, per_thread);
  // Equal blocks: a ragged last block of a few rows would run the micro-kernel at its worst.
  const int64_t blocks = (m + rows - 1) / rows;
  rows = ((m + blocks - 1) / blocks + kAlign - 1) / kAlign * kAlign;
  return std::min(rows, std::max<int64_t>(m, 1));
}

}  // namespace detail
namespace {

using detail::ConstMatrixMap;
using detail::ConstStridedMap;
using detail::MatrixMap;
using detail::RowEpilogue;

template <class OpA, class OpB>
void multiply_into(MatrixMap& y, const OpA& a, const OpB& b, float alpha, bool accumulate) {
  if (accumulate) {
    y.noalias() += alpha * a * b;
  } else {
    y.noalias() = alpha * a * b;
  }
}

// Rows [r0, r0 + rows) of y = alpha * op(A) * op(B) + beta * C (C broadcast as in cpu::gemm).
// Rows of op(A) are a contiguous slab of A, or a column slab of A (row stride M) when trans_a.
void gemm_rows(const GemmParams& p, const float* a, const float* b, const float* c, int64_t r0, int64_t rows,
               float* y) {
  MatrixMap y_map(y, rows, p.n);
  const bool use_c = c != nullptr && p.beta != 0.f;  // as cpu::gemm: beta 0 ignores a NaN in C
  for (int64_t i = 0; use_c && i < rows; ++i) {
    const float* c_row = c + (p.c_rows == 1 ? 0 : (r0 + i) * p.c_cols);
    for (int64_t j = 0; j < p.n; ++j) y[i * p.n + j] = p.beta * c_row[p.c_cols == 1 ? 0 : j];
  }
  if (p.k <= 0) {
    if (!use_c) y_map.setZero();
    return;
  }
  const ConstMatrixMap b_map(b, p.trans_b ? p.n : p.k, p.trans_b ? p.k : p.n);
  if (!p.trans_a) {
    const ConstMatrixMap a_rows(a + r0 * p.k, rows, p.k);
    if (p.trans_b) return multiply_into(y_map, a_rows, b_map.transpose(), p.alpha, use_c);
    return multiply_into(y_map, a_rows, b_map, p.alpha, use_c);
  }
  const ConstStridedMap a_cols(a + r0, p.k, rows, Eigen::OuterStride<>(p.m));
  if (p.trans_b) return multiply_into(y_map, a_cols.transpose(), b_map.transpose(), p.alpha, use_c);
  multiply_into(y_map, a_cols.transpose(), b_map, p.alpha, use_c);
}

// y[rows, n] = bias (broadcast per column, nullable) + a[rows, k] * w[n, k]^T.
void linear_rows(int64_t rows, int64_t n, int64_t k, const float* a, const float* w, const float* bias, float* y,
                 int64_t ld) {
  detail::StridedMap y_map(y, rows, n, Eigen::OuterStride<>(ld));
  for (int64_t i = 0; i < rows; ++i) {
    if (bias != nullptr) {
      std::copy(bias, bias + n, y + i * ld);
    } else {
      std::fill(y + i * ld, y + i * ld + n, 0.f);
    }
  }
  if (k > 0) y_map.noalias() += ConstMatrixMap(a, rows, k) * ConstMatrixMap(w, n, k).transpose();
}

// Where a row block is built: straight in y, or in thread-local scratch when y aliases an
// epilogue operand (an in-place residual), copied to y only after the epilogue has read it.
class BlockTarget {
 public:
  explicit BlockTarget(bool scratch) : scratch_(scratch) {}
  float* open(float* y_blk, int64_t count) {
    if (!scratch_) return y_blk;
    buf_.resize(static_cast<size_t>(count));
    return buf_.data();
  }
  void close(const float* out, float* y_blk, int64_t count) const {
    if (out != y_blk) std::copy(out, out + count, y_blk);
  }

 private:
  bool scratch_;
  std::vector<float> buf_;
};

// Threads for `units` blocks of total `macs`; one team loop with single-threaded Eigen inside.
// With a single block (team 1) Eigen threads that GEMM itself, so the two never nest.
int block_team(int64_t macs, int64_t units) {
  return static_cast<int>(std::min<int64_t>(units, detail::team_size(macs)));
}

}  // namespace

void gemm_fused(const GemmParams& p, const float* a, const float* b, const float* c, const Epilogue& ep, float* y) {
  if (p.m <= 0 || p.n <= 0) return;
  const RowEpilogue finish(ep, p.n);
  const int64_t rb = detail::gemm_row_block(p.m, p.n, p.k), blocks = (p.m + rb - 1) / rb;
  const int team = block_team(p.m * p.n * std::max<int64_t>(p.k, 1), blocks);
  const bool aliased = detail::epilogue_reads(ep, y, p.m * p.n);
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    BlockTarget target(aliased);
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * rb, rows = std::min(rb, p.m - r0);
      float* out = target.open(y + r0 * p.n, rows * p.n);
      gemm_rows(p, a, b, c, r0, rows, out);
      finish.apply_rows(r0, rows, out, p.n);
      target.close(out, y + r0 * p.n, rows * p.n);
    }
  }
}

// Units are (batch, row block); epilogue rows are numbered across batches (flat = row * N), so
// the flat index matches the full [..., M, N] output.
void matmul_fused(const MatMulParams& p, const float* a, const float* b, const Epilogue& ep, float* y) {
  if (p.batch <= 0 || p.m <= 0 || p.n <= 0) return;
  assert(p.a_batch_index.empty() || static_cast<int64_t>(p.a_batch_index.size()) == p.batch);
  assert(p.b_batch_index.empty() || static_cast<int64_t>(p.b_batch_index.size()) == p.batch);
  const RowEpilogue finish(ep, p.n);
  const int64_t rb = detail::gemm_row_block(p.m * p.batch, p.n, p.k), blocks = (p.m + rb - 1) / rb;
  const int64_t units = p.batch * blocks;
  const int team = block_team(p.batch * p.m * p.n * std::max<int64_t>(p.k, 1), units);
  const bool aliased = detail::epilogue_reads(ep, y, p.batch * p.m * p.n);
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    BlockTarget target(aliased);
#pragma omp for schedule(static)
    for (int64_t u = 0; u < units; ++u) {
      const int64_t bt = u / blocks, r0 = (u % blocks) * rb, rows = std::min(rb, p.m - r0);
      const int64_t ai = p.a_batch_index.empty() ? bt : p.a_batch_index[bt];
      const int64_t bi = p.b_batch_index.empty() ? bt : p.b_batch_index[bt];
      float* y_blk = y + (bt * p.m + r0) * p.n;
      float* out = target.open(y_blk, rows * p.n);
      MatrixMap out_map(out, rows, p.n);
      if (p.k > 0) {
        out_map.noalias() =
            ConstMatrixMap(a + (ai * p.m + r0) * p.k, rows, p.k) * ConstMatrixMap(b + bi * p.k * p.n, p.k, p.n);
      } else {
        out_map.setZero();
      }
      finish.apply_rows(bt * p.m + r0, rows, out, p.n);
      target.close(out, y_blk, rows * p.n);
    }
  }
}

// Per row block: one GEMM against all members' weights into a scratch tile; each member's
// columns are finished in the tile (so an output aliasing an operand is safe) and copied out.
void gemm_horizontal(int64_t m, int64_t k, const float* a, const float* w_cat, const float* b_cat,
                     std::vector<HorizontalMember>& members) {
  int64_t total = 0;
  std::vector<RowEpilogue> finish;
  finish.reserve(members.size());
  for (const HorizontalMember& mem : members) {
    finish.emplace_back(mem.ep, mem.n);
    total += mem.n;
  }
  if (m <= 0 || total <= 0) return;
  const int64_t rb = detail::gemm_row_block(m, total, k), blocks = (m + rb - 1) / rb;
  const int team = block_team(m * total * std::max<int64_t>(k, 1), blocks);
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<float> tile;
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t r0 = blk * rb, rows = std::min(rb, m - r0);
      tile.resize(static_cast<size_t>(rows * total));
      linear_rows(rows, total, k, a + r0 * k, w_cat, b_cat, tile.data(), total);
      int64_t off = 0;
      for (size_t i = 0; i < members.size(); ++i) {
        const int64_t n = members[i].n;
        finish[i].apply_rows(r0, rows, tile.data() + off, total);
        for (int64_t r = 0; r < rows; ++r) {
          const float* src = tile.data() + r * total + off;
          std::copy(src, src + n, members[i].y + (r0 + r) * n);
        }
        off += n;
      }
    }
  }
}

// One loop over (member, row block): small per-member GEMMs would each be too small to thread.
void gemm_grouped(int64_t m, int64_t n, int64_t k, std::vector<GroupedGemmMember>& members) {
  if (m <= 0 || n <= 0 || members.empty()) return;
  std::vector<RowEpilogue> finish;
  finish.reserve(members.size());
  for (const GroupedGemmMember& mem : members) finish.emplace_back(mem.ep, n);
  const int64_t count = static_cast<int64_t>(members.size());
  const int64_t rb = detail::gemm_row_block(m * count, n, k), blocks = (m + rb - 1) / rb;
  const int team = block_team(count * m * n * std::max<int64_t>(k, 1), count * blocks);
  std::vector<char> aliased;
  for (const GroupedGemmMember& mem : members) aliased.push_back(detail::epilogue_reads(mem.ep, mem.y, m * n));
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    BlockTarget direct(false), scratch(true);
#pragma omp for schedule(static)
    for (int64_t u = 0; u < count * blocks; ++u) {
      const size_t i = static_cast<size_t>(u / blocks);
      const GroupedGemmMember& mem = members[i];
      const int64_t r0 = (u % blocks) * rb, rows = std::min(rb, m - r0);
      BlockTarget& target = aliased[i] ? scratch : direct;
      float* out = target.open(mem.y + r0 * n, rows * n);
      linear_rows(rows, n, k, mem.a + r0 * k, mem.w, mem.bias, out, n);
      finish[i].apply_rows(r0, rows, out, n);
      target.close(out, mem.y + r0 * n, rows * n);
    }
  }
}

}  // namespace fusert::cpu
