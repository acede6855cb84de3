// attention (cpu::attention and, where this build has oneDNN, onednn::AttentionAnchor) against a
// naive per-query loop (double dot products, double softmax): separate and packed-QKV layouts,
// full/broadcast masks, odd sequence lengths, several query blocks, fully masked rows (zeros, no
// NaN) and logits of 1e4.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/onednn.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/test_fused_reference.h"

namespace cpu = fusert::cpu;
namespace ft = fusert::test;
using ft::expect_values;
using ft::kTol;
using ft::max_rel_err;
using ft::random_floats;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<float> ref_attention(const cpu::AttentionParams& p, const float* q, const float* k, const float* v,
                                 const float* mask) {
  const int64_t s = p.seq, d = p.head_dim, hd = p.heads * d;
  std::vector<float> y(static_cast<size_t>(p.batch * s * hd));
  std::vector<float> row(static_cast<size_t>(s));
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t h = 0; h < p.heads; ++h)
      for (int64_t i = 0; i < s; ++i) {
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += double(q[(b * s + i) * p.q_stride + p.q_col + h * d + e]) *
                   k[(b * s + j) * p.k_stride + p.k_col + h * d + e];
          const double m = mask ? mask[b * p.mask_b_stride + i * p.mask_i_stride + j] : 0.0;
          row[static_cast<size_t>(j)] = static_cast<float>(p.scale * dot + m);
        }
        ft::ref_softmax(row.data(), s);
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j)
            acc += double(row[static_cast<size_t>(j)]) * v[(b * s + j) * p.v_stride + p.v_col + h * d + e];
          y[static_cast<size_t>((b * s + i) * hd + h * d + e)] = static_cast<float>(acc);
        }
      }
  return y;
}

enum class MaskKind { kNone, kFull, kPadding, kShared };

// The kernels under test: our own, and oneDNN's matmuls where this build has them.
std::vector<bool> kernels() { return cpu::onednn::built() ? std::vector<bool>{false, true} : std::vector<bool>{false}; }

void run_attention(bool onednn, const cpu::AttentionParams& p, const float* q, const float* k, const float* v,
                   const float* mask, float* y) {
  if (!onednn) return cpu::attention(p, q, k, v, mask, y);
  std::string why;
  auto a = cpu::onednn::AttentionAnchor::create(p, &why);
  REQUIRE_MESSAGE(a != nullptr, why);
  a->run(q, k, v, mask, y);
}

// Runs one configuration with either three separate [B*S, H*D] buffers or one packed QKV buffer.
void check_attention(int64_t batch, int64_t heads, int64_t seq, int64_t dim, bool packed, MaskKind mk, bool onednn) {
  cpu::AttentionParams p;
  p.batch = batch, p.heads = heads, p.seq = seq, p.head_dim = dim;
  p.scale = 1.f / std::sqrt(static_cast<float>(dim));
  const int64_t hd = heads * dim, rows = batch * seq;
  const auto qkv = random_floats(rows * 3 * hd, 1, -2.f, 2.f);
  const auto q_sep = random_floats(rows * hd, 2), k_sep = random_floats(rows * hd, 3),
             v_sep = random_floats(rows * hd, 4);
  const float *q = q_sep.data(), *k = k_sep.data(), *v = v_sep.data();
  p.q_stride = p.k_stride = p.v_stride = hd;
  if (packed) {
    q = k = v = qkv.data();
    p.q_stride = p.k_stride = p.v_stride = 3 * hd;
    p.k_col = hd, p.v_col = 2 * hd;
  }
  std::vector<float> mask;
  if (mk == MaskKind::kFull) {  // [B, S, S] with a causal pattern
    mask.assign(static_cast<size_t>(batch * seq * seq), 0.f);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < seq; ++i)
        for (int64_t j = i + 1; j < seq; ++j) mask[static_cast<size_t>((b * seq + i) * seq + j)] = -kInf;
    p.mask_b_stride = seq * seq, p.mask_i_stride = seq;
  } else if (mk == MaskKind::kPadding) {  // [B, 1, S]: batch b pads its last b positions
    mask = random_floats(batch * seq, 5);
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = std::max<int64_t>(seq - b, 1); j < seq; ++j) mask[static_cast<size_t>(b * seq + j)] = -kInf;
    p.mask_b_stride = seq, p.mask_i_stride = 0;
  } else if (mk == MaskKind::kShared) {  // [1, 1, S]
    mask = random_floats(seq, 6);
  }
  const float* m = mask.empty() ? nullptr : mask.data();
  const auto ref = ref_attention(p, q, k, v, m);
  std::vector<float> got(ref.size(), -777.f);
  run_attention(onednn, p, q, k, v, m, got.data());
  INFO((onednn ? "onednn " : "own ") << "B " << batch << " H " << heads << " S " << seq << " D " << dim
                                     << (packed ? " packed" : " separate") << " mask " << static_cast<int>(mk));
  CHECK(max_rel_err(got, ref) <= kTol);
}

}  // namespace

TEST_CASE("attention: hand-computed two tokens, one head") {
  cpu::AttentionParams p;
  p.seq = 2, p.head_dim = 1, p.q_stride = p.k_stride = p.v_stride = 1;
  // q . k = {0, ln 3} for both queries: weights {1/4, 3/4} over v = {4, 8} -> 7.
  const float q[] = {1, 1}, k[] = {0, std::log(3.f)}, v[] = {4, 8};
  for (bool onednn : kernels()) {
    std::vector<float> y(2);
    run_attention(onednn, p, q, k, v, nullptr, y.data());
    expect_values(y, {7, 7});
  }
}

TEST_CASE("attention: matches naive attention over layouts, masks and odd lengths") {
  for (bool onednn : kernels()) {
    for (int64_t seq : {1, 3, 13}) {
      for (MaskKind mk : {MaskKind::kNone, MaskKind::kFull, MaskKind::kPadding, MaskKind::kShared}) {
        check_attention(2, 3, seq, 8, false, mk, onednn);
        check_attention(2, 3, seq, 8, true, mk, onednn);
      }
    }
    check_attention(1, 2, 3, 128, true, MaskKind::kFull, onednn);      // D = 128
    check_attention(1, 2, 200, 64, true, MaskKind::kFull, onednn);     // 4 query blocks, ragged last
    check_attention(1, 1, 512, 16, false, MaskKind::kShared, onednn);  // S = 512
    check_attention(3, 12, 64, 32, true, MaskKind::kPadding, onednn);  // one full block, MiniLM's heads
    check_attention(2, 5, 65, 1, true, MaskKind::kFull, onednn);       // D = 1, a block and one query
    check_attention(1, 1, 129, 13, false, MaskKind::kNone, onednn);    // two blocks and one query
  }
}

TEST_CASE("attention: fully masked query rows give zeros, never NaN") {
  cpu::AttentionParams p;
  p.batch = 1, p.heads = 2, p.seq = 3, p.head_dim = 4, p.q_stride = p.k_stride = p.v_stride = 8;
  p.mask_i_stride = 3, p.mask_b_stride = 9;
  const auto q = random_floats(3 * 8, 1), k = random_floats(3 * 8, 2), v = random_floats(3 * 8, 3);
  std::vector<float> mask(9, 0.f);
  for (int j = 0; j < 3; ++j) mask[static_cast<size_t>(3 + j)] = -kInf;  // query 1 sees nothing
  for (bool onednn : kernels()) {
    std::vector<float> y(3 * 8, -777.f);
    run_attention(onednn, p, q.data(), k.data(), v.data(), mask.data(), y.data());
    for (int e = 0; e < 8; ++e) CHECK(y[static_cast<size_t>(8 + e)] == 0.f);
    for (float val : y) CHECK(std::isfinite(val));
    CHECK(max_rel_err(y, ref_attention(p, q.data(), k.data(), v.data(), mask.data())) <= kTol);
  }
}

TEST_CASE("attention: logits of 1e4 stay finite and pick the largest key") {
  cpu::AttentionParams p;
  p.seq = 13, p.head_dim = 1, p.q_stride = p.k_stride = p.v_stride = 1;
  std::vector<float> q(13, 100.f), k(13), v(13);
  for (int j = 0; j < 13; ++j)
    k[static_cast<size_t>(j)] = 100.f * static_cast<float>(j % 3 - 1), v[static_cast<size_t>(j)] = float(j);
  k[7] = 101.f;  // logit 10100 beats 10000 by 100: softmax puts all weight on key 7
  for (bool onednn : kernels()) {
    std::vector<float> y(13);
    run_attention(onednn, p, q.data(), k.data(), v.data(), nullptr, y.data());
    expect_values(y, std::vector<float>(13, 7.f));
    CHECK(max_rel_err(y, ref_attention(p, q.data(), k.data(), v.data(), nullptr)) <= kTol);
  }
}
