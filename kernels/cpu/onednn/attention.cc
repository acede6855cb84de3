// AttentionAnchor (kernels/cpu/onednn.h): the two GEMMs of each query block as oneDNN matmuls
// batched over the heads, the scale, mask and softmax between them in place.
#include <omp.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/onednn/internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

// Query rows per block, as cpu::attention: H x 64 x S scores stay in L2 between the two GEMMs
// (MiniLM, 12 heads, S 256: 768 KiB).
constexpr int64_t kQueryBlock = 64;

// The two matmuls of a block of `rows` queries (every full block shares one pair; a shorter
// last block has its own).
struct BlockPrims {
  int64_t rows = 0;
  memory::desc q, k_t, scores, v, y;
  dnnl::matmul::primitive_desc pd_qk, pd_pv;
  dnnl::matmul qk, pv;
};

class AttentionImpl final : public AttentionAnchor {
 public:
  AttentionParams p;
  BlockPrims full, tail;  // tail.rows == 0: S is a multiple of the block
  std::string info;

  bool make(BlockPrims* b, int64_t rows, std::string* why) {
    const int64_t h = p.heads, s = p.seq, d = p.head_dim;
    b->rows = rows;
    b->q = memory::desc({h, rows, d}, memory::data_type::f32, Dims{d, p.q_stride, 1});
    b->k_t = memory::desc({h, d, s}, memory::data_type::f32, Dims{d, 1, p.k_stride});
    b->scores = memory::desc({h, rows, s}, memory::data_type::f32, Dims{rows * s, s, 1});
    b->v = memory::desc({h, s, d}, memory::data_type::f32, Dims{d, p.v_stride, 1});
    b->y = memory::desc({h, rows, d}, memory::data_type::f32, Dims{d, h * d, 1});
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    try {
      b->pd_qk = dnnl::matmul::primitive_desc(dnnl::matmul::desc(b->q, b->k_t, b->scores), attr, cpu_engine());
      b->pd_pv = dnnl::matmul::primitive_desc(dnnl::matmul::desc(b->scores, b->v, b->y), attr, cpu_engine());
    } catch (const dnnl::error& e) {
      *why = std::string("oneDNN has no matmul for the attention's strided heads: ") + e.what();
      return false;
    }
    for (const auto* pd : {&b->pd_qk, &b->pd_pv}) {
      if (is_reference(pd->impl_info_str())) {
        *why =
            std::string("oneDNN has only a reference matmul for the attention's heads (") + pd->impl_info_str() + ")";
        return false;
      }
    }
    b->qk = dnnl::matmul(b->pd_qk);
    b->pv = dnnl::matmul(b->pd_pv);
    return true;
  }

  // scale * scores + mask, then the row softmax, over the block's H x rows rows in place.
  void softmax_rows(const float* mask, int64_t b, int64_t i0, int64_t rows, float* scores) const {
    const int64_t s = p.seq, n = p.heads * rows;
    const int team = static_cast<int>(std::min<int64_t>(n, cpu::detail::team_size(n * s * 8)));
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t r = 0; r < n; ++r) cpu::detail::attention_probabilities_row(p, mask, b, i0 + r % rows, scores + r * s);
  }

  void run(const float* q, const float* k, const float* v, const float* mask, float* y) const override {
    if (p.batch <= 0 || p.heads <= 0 || p.seq <= 0 || p.head_dim <= 0) return;
    dnnl::stream st(cpu_engine());
    const int64_t s = p.seq, hd = p.heads * p.head_dim;
    float* scores = scratch(7, static_cast<size_t>(p.heads * full.rows * s));
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t i0 = 0; i0 < s; i0 += full.rows) {
        const BlockPrims& bp = s - i0 >= full.rows ? full : tail;
        auto mem = [](const memory::desc& md, const float* ptr) {
          return memory(md, cpu_engine(), const_cast<float*>(ptr));
        };
        memory sc = mem(bp.scores, scores);
        bp.qk.execute(st, {{DNNL_ARG_SRC, mem(bp.q, q + (b * s + i0) * p.q_stride + p.q_col)},
                           {DNNL_ARG_WEIGHTS, mem(bp.k_t, k + b * s * p.k_stride + p.k_col)},
                           {DNNL_ARG_DST, sc},
                           {DNNL_ARG_SCRATCHPAD, scratchpad(bp.pd_qk.scratchpad_desc())}});
        st.wait();
        softmax_rows(mask, b, i0, bp.rows, scores);
        bp.pv.execute(st, {{DNNL_ARG_SRC, sc},
                           {DNNL_ARG_WEIGHTS, mem(bp.v, v + b * s * p.v_stride + p.v_col)},
                           {DNNL_ARG_DST, mem(bp.y, y + (b * s + i0) * hd)},
                           {DNNL_ARG_SCRATCHPAD, scratchpad(bp.pd_pv.scratchpad_desc())}});
        st.wait();
      }
    }
  }

  std::string describe() const override { return info; }
};

}  // namespace

std::unique_ptr<AttentionAnchor> AttentionAnchor::create(const AttentionParams& p, std::string* why) {
  if (p.batch <= 0 || p.heads <= 0 || p.seq <= 0 || p.head_dim <= 0) {
    *why = "an empty attention";
    return nullptr;
  }
  auto a = std::make_unique<AttentionImpl>();
  a->p = p;
  const int64_t rows = std::min(kQueryBlock, p.seq), tail = p.seq % rows;
  if (!a->make(&a->full, rows, why)) return nullptr;
  if (tail > 0 && !a->make(&a->tail, tail, why)) return nullptr;
  a->info = std::string("oneDNN matmuls over the heads (") + a->full.pd_qk.impl_info_str() + ", " +
            a->full.pd_pv.impl_info_str() + "), " + std::to_string(rows) + " queries a block";
  return a;
}

}  // namespace fusert::cpu::onednn
