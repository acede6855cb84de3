// Fused multi-head attention: softmax(scale * Q K^T + mask) V per (batch, head, query block),
// with the score block in a thread-local buffer so the [S, S] probabilities never reach memory.
// Q, K, V are read in place as strided per-head views of token-major (possibly QKV-packed) rows.
#include <algorithm>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::ConstStridedMap;
using detail::StridedMap;

// Query rows per unit: 64 rows of up to 512 scores is 128 KiB of scratch, which stays in L2
// between the two GEMMs, and splitting queries gives the team work when batch * heads is small.
constexpr int64_t kQueryBlock = 64;

struct HeadBlock {
  int64_t b, h, i0, rows;
};

// Scores of one query block: scale * (Q K^T) + mask, then the row softmax in place. A fully
// masked (all -inf) row becomes zeros inside softmax_row, so its output is 0, never NaN.
void block_probabilities(const AttentionParams& p, const HeadBlock& hb, const float* q, const float* k,
                         const float* mask, float* scores) {
  const int64_t s = p.seq, d = p.head_dim;
  const ConstStridedMap q_blk(q + (hb.b * s + hb.i0) * p.q_stride + p.q_col + hb.h * d, hb.rows, d,
                              Eigen::OuterStride<>(p.q_stride));
  const ConstStridedMap k_head(k + hb.b * s * p.k_stride + p.k_col + hb.h * d, s, d, Eigen::OuterStride<>(p.k_stride));
  detail::MatrixMap score_map(scores, hb.rows, s);
  score_map.noalias() = q_blk * k_head.transpose();
  for (int64_t r = 0; r < hb.rows; ++r) detail::attention_probabilities_row(p, mask, hb.b, hb.i0 + r, scores + r * s);
}

void attention_block(const AttentionParams& p, const HeadBlock& hb, const float* q, const float* k, const float* v,
                     const float* mask, float* scores, float* y) {
  const int64_t s = p.seq, d = p.head_dim, y_stride = p.heads * d;
  block_probabilities(p, hb, q, k, mask, scores);
  const ConstStridedMap v_head(v + hb.b * s * p.v_stride + p.v_col + hb.h * d, s, d, Eigen::OuterStride<>(p.v_stride));
  StridedMap y_blk(y + (hb.b * s + hb.i0) * y_stride + hb.h * d, hb.rows, d, Eigen::OuterStride<>(y_stride));
  y_blk.noalias() = detail::ConstMatrixMap(scores, hb.rows, s) * v_head;
}

}  // namespace

namespace detail {

void attention_probabilities_row(const AttentionParams& p, const float* mask, int64_t b, int64_t i, float* row) {
  const int64_t s = p.seq;
  if (mask != nullptr) {
    const float* m = mask + b * p.mask_b_stride + i * p.mask_i_stride;
    for (int64_t j = 0; j < s; ++j) row[j] = p.scale * row[j] + m[j];
  } else {
    for (int64_t j = 0; j < s; ++j) row[j] *= p.scale;
  }
  softmax_row(s, row);
}

}  // namespace detail

void attention(const AttentionParams& p, const float* q, const float* k, const float* v, const float* mask, float* y) {
  if (p.batch <= 0 || p.heads <= 0 || p.seq <= 0 || p.head_dim <= 0) return;
  const int64_t qb = std::min(kQueryBlock, p.seq), blocks = (p.seq + qb - 1) / qb;
  const int64_t units = p.batch * p.heads * blocks;
  const int64_t macs = 2 * p.batch * p.heads * p.seq * p.seq * p.head_dim;
  const int team = static_cast<int>(std::min<int64_t>(units, detail::team_size(macs)));
  const detail::SerialEigen serial_eigen(team == 1);
#pragma omp parallel num_threads(team) if (team > 1)
  {
    std::vector<float> scores(static_cast<size_t>(qb * p.seq));
#pragma omp for schedule(static)
    for (int64_t u = 0; u < units; ++u) {
      const int64_t blk = u % blocks, bh = u / blocks, i0 = blk * qb;
      const HeadBlock hb{bh / p.heads, bh % p.heads, i0, std::min(qb, p.seq - i0)};
      attention_block(p, hb, q, k, v, mask, scores.data(), y);
    }
  }
}

}  // namespace fusert::cpu
