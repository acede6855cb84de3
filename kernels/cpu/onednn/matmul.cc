// oneDNN matmul anchor for Gemm and batched MatMul: the primitive with post-ops, a constant B
// reordered once.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <oneapi/dnnl/dnnl.hpp>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/onednn/internal.h"

namespace fusert::cpu::onednn {

using namespace detail;

namespace {

class GemmImpl final : public GemmAnchor {
 public:
  Dims out_dims;
  PostOps po;
  size_t steps = 0;
  int64_t channels = 0;  ///< N: per-channel operands index the column
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_desc, b_user, y_desc;
  memory::desc a_bf16;    ///< Precision::kBf16: A rounded to bf16 per call (dense), else empty
  dnnl::reorder to_bf16;  ///< a_desc -> a_bf16
  memory weights, bias;   ///< constant B in the primitive's format (empty when B is an input)
  bool has_bias = false, const_b = false;
  std::string info;
  /// The reference kernel for calls with non-finite inputs before a NaN-squashing post-op:
  /// (a, b, ep, y) -> gemm_fused / matmul_fused with the caller's constants.
  std::function<void(const float*, const float*, const Epilogue&, float*)> reference;
  int64_t a_count = 0, b_count = 0;
  long squash = -1;

  size_t fused_steps() const override { return po.fused; }
  std::string describe() const override { return info; }

  void run(const float* a, const float* b, const Epilogue& ep, float* y) const override {
    if (squash >= 0 && (!inputs_finite(a, a_count, ep, squash, out_dims, out_dims.size() - 1) ||
                        (!const_b && !all_finite(b, b_count)))) {
      reference(a, b, ep, y);
      return;
    }
    dnnl::stream s(cpu_engine());
    int64_t total = 1;
    for (auto d : out_dims) total *= d;
    const bool alias = aliases_output(ep, y, kNoSum);
    float* out = alias ? scratch(2, static_cast<size_t>(total)) : y;
    memory src(a_desc, cpu_engine(), const_cast<float*>(a));
    if (!a_bf16.is_zero()) {
      memory rounded(a_bf16, cpu_engine(), scratch(0, a_bf16.get_size() / sizeof(float) + 16));
      to_bf16.execute(s, src, rounded);
      src = rounded;
    }
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, src},
        {DNNL_ARG_WEIGHTS, const_b ? weights : memory(b_user, cpu_engine(), const_cast<float*>(b))},
        {DNNL_ARG_DST, memory(y_desc, cpu_engine(), out)},
        {DNNL_ARG_SCRATCHPAD, scratchpad(pd.scratchpad_desc())}};
    if (has_bias) args.insert({DNNL_ARG_BIAS, bias});
    bind_binary(po, ep, &args);
    prim.execute(s, args);
    s.wait();
    if (ep.tail == EpTail::kLayerNorm) {
      layer_norm_tail(ep, po.fused, total / channels, channels, out);
    } else {
      apply_rest(ep, po.fused, total, channels, 1, out);
    }
    if (alias) std::memcpy(y, out, static_cast<size_t>(total) * sizeof(float));
  }

  // make_f32 (below), first in bf16 when `bf16` (source and weights; constant B only), then in
  // f32 where oneDNN has no optimised bf16 matmul.
  bool make(const Epilogue& ep, const memory::desc& w_desc, const memory::desc* bias_desc, bool bf16,
            std::string* why) {
    if (bf16) {
      const Dims& ad = a_desc.dims();
      a_bf16 = memory::desc(ad, memory::data_type::bf16, dense_strides(ad));
      const memory::desc w_bf16(w_desc.dims(), memory::data_type::bf16, memory::format_tag::any);
      if (make_f32(ep, w_bf16, bias_desc, a_bf16, why)) {
        to_bf16 = dnnl::reorder(dnnl::reorder::primitive_desc(cpu_engine(), a_desc, cpu_engine(), a_bf16));
        info += "; bf16 source and weights";
        return true;
      }
      a_bf16 = memory::desc();
      if (!make_f32(ep, w_desc, bias_desc, a_desc, why)) return false;
      info += "; f32 (no optimised bf16 kernel)";
      return true;
    }
    return make_f32(ep, w_desc, bias_desc, a_desc, why);
  }

  // Creates the primitive with the longest post-op prefix that has an optimised implementation.
  bool make_f32(const Epilogue& ep, const memory::desc& w_desc, const memory::desc* bias_desc,
                const memory::desc& src_desc, std::string* why) {
    steps = ep.steps.size();
    for (size_t limit = ep.steps.size() + 1; limit-- > 0;) {
      PostOps p = make_post_ops(ep.steps, out_dims, out_dims.size() - 1, limit);
      if (p.fused < limit) continue;
      dnnl::primitive_attr attr;
      attr.set_post_ops(p.ops);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      try {
        dnnl::matmul::desc d = bias_desc ? dnnl::matmul::desc(src_desc, w_desc, *bias_desc, y_desc)
                                         : dnnl::matmul::desc(src_desc, w_desc, y_desc);
        dnnl::matmul::primitive_desc candidate(d, attr, cpu_engine());
        if (is_reference(candidate.impl_info_str())) continue;
        pd = candidate;
        po = std::move(p);
      } catch (const dnnl::error&) {
        continue;
      }
      break;
    }
    if (!pd) {
      *why = "oneDNN has no optimised matmul for these parameters";
      return false;
    }
    prim = dnnl::matmul(pd);
    info = describe_pd(pd.impl_info_str(), po, steps, false, false);
    squash = first_squash(ep.steps, po.fused);
    return true;
  }

  void load_weights(const float* b, float scale) {
    dnnl::stream s(cpu_engine());
    std::vector<float> scaled;
    const float* src = b;
    if (scale != 1.f) {
      scaled.assign(b, b + b_user.get_size() / sizeof(float));
      for (float& v : scaled) v *= scale;
      src = scaled.data();
    }
    memory wu(b_user, cpu_engine(), const_cast<float*>(src));
    weights = memory(pd.weights_desc(), cpu_engine());
    dnnl::reorder(wu, weights).execute(s, wu, weights);
    s.wait();
  }
};

// The weight layout of a Gemm: oneDNN 2.6's sgemm-based matmul (gemm:jit, its AVX2 path) takes
// B [K, N] in plain `ab` for format `any`. Timed on one AVX2 core at M = 128 (a small C++ loop
// over the oneDNN API), `ba` (the [N, K] Linear layout, read transposed) ran BERT's FFN
// up-projection (K 768, N 3072) in 10.8-11.3 ms against 19.5-21.7 in `ab`, MiniLM's (384, 1536)
// in 1.9 against 3.2, and (512, 1000) in 1.9 against 2.4; with N < 2K it was a tie or `ab` won
// by up to 1.4x (K = N = 384). So: `ba` when N >= 2K and the primitive is gemm:jit; `any`
// otherwise (brgemm on AVX-512 picks its own blocked layout).
memory::desc gemm_weight_layout(const GemmParams& p, const memory::desc& a, const memory::desc& y, std::string* note) {
  const memory::desc any({p.k, p.n}, memory::data_type::f32, memory::format_tag::any);
  if (p.n < 2 * p.k) return any;
  try {
    const std::string impl = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, any, y), cpu_engine()).impl_info_str();
    if (impl.rfind("gemm:", 0) != 0) return any;
  } catch (const dnnl::error&) {
    return any;
  }
  *note = "; weights ba (N >= 2K)";
  return memory::desc({p.k, p.n}, memory::data_type::f32, memory::format_tag::ba);
}

}  // namespace

std::unique_ptr<GemmAnchor> GemmAnchor::create_gemm(const GemmParams& p, const float* b, const float* c,
                                                    const Epilogue& ep, std::string* why, Precision prec) {
  if (p.m == 0 || p.n == 0 || p.k == 0) {  // oneDNN 2.6 divides by them (SIGFPE)
    *why = "a zero-size dim (the reference kernel runs it)";
    return nullptr;
  }
  if (ep.tail == EpTail::kGlobalAvgPool) {
    *why = "a global-pool tail on a GEMM";
    return nullptr;
  }
  if (c && !(p.c_rows == 1 && (p.c_cols == p.n || p.c_cols == 1))) {
    *why = "Gemm C is not a per-column bias";
    return nullptr;
  }
  auto g = std::make_unique<GemmImpl>();
  g->out_dims = {p.m, p.n};
  g->channels = p.n;
  g->const_b = true;
  g->a_desc = memory::desc({p.m, p.k}, memory::data_type::f32, p.trans_a ? Dims{1, p.m} : Dims{p.k, 1});
  g->b_user = memory::desc({p.k, p.n}, memory::data_type::f32, p.trans_b ? Dims{1, p.k} : Dims{p.n, 1});
  g->y_desc = memory::desc({p.m, p.n}, memory::data_type::f32, Dims{p.n, 1});
  std::string layout_note;
  const memory::desc w_desc = gemm_weight_layout(p, g->a_desc, g->y_desc, &layout_note);
  const memory::desc b_desc({1, p.n}, memory::data_type::f32, Dims{p.n, 1});
  g->has_bias = c != nullptr;
  if (!g->make(ep, w_desc, c ? &b_desc : nullptr, prec == Precision::kBf16, why)) return nullptr;
  if (g->a_bf16.is_zero()) g->info += layout_note;
  if (g->squash >= 0 && (!all_finite(b, p.k * p.n) || !all_finite(c, c ? p.c_cols : 0))) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  g->load_weights(b, p.alpha);
  g->a_count = p.m * p.k;
  g->reference = [p, b, c](const float* a, const float*, const Epilogue& e, float* y) { gemm_fused(p, a, b, c, e, y); };
  if (c) {
    g->bias = memory(b_desc, cpu_engine());
    float* bp = static_cast<float*>(g->bias.get_data_handle());
    for (int64_t i = 0; i < p.n; ++i) bp[i] = p.beta * c[p.c_cols == 1 ? 0 : i];
  }
  return g;
}

std::unique_ptr<GemmAnchor> GemmAnchor::create_matmul(const MatMulParams& p, const float* b_const, const float* bias,
                                                      const Epilogue& ep, std::string* why, Precision prec) {
  if (p.batch == 0 || p.m == 0 || p.n == 0 || p.k == 0) {  // oneDNN 2.6 divides by them (SIGFPE)
    *why = "a zero-size dim (the reference kernel runs it)";
    return nullptr;
  }
  if (ep.tail == EpTail::kGlobalAvgPool) {
    *why = "a global-pool tail on a GEMM";
    return nullptr;
  }
  auto batch_of = [&](const std::vector<int64_t>& idx, int64_t* dim) {  // oneDNN broadcasts a batch of 1
    const BatchPattern b = batch_pattern(idx);
    *dim = b == BatchPattern::kShared ? 1 : p.batch;
    return b != BatchPattern::kIrregular;
  };
  int64_t ba = 0, bb = 0;
  if (!batch_of(p.a_batch_index, &ba) || !batch_of(p.b_batch_index, &bb)) {
    *why = "MatMul batch broadcast pattern";
    return nullptr;
  }
  auto g = std::make_unique<GemmImpl>();
  g->channels = p.n;
  g->const_b = b_const != nullptr;
  // B shared by every batch and A's batches in order (a Linear layer on [B, S, K] activations,
  // or torchvision's sequence-first [S, 1, K]): one [batch * M, K] x [K, N] GEMM. The batched
  // form gave oneDNN 2.6 plain weights, no post-ops, and, at M = 1, 197 GEMVs instead of a GEMM.
  // Operands keep their meaning: per-row operands index the flattened row b * M + m.
  const bool fold = bb == 1 && ba == p.batch;
  const Dims a_dims = fold ? Dims{p.batch * p.m, p.k} : Dims{ba, p.m, p.k};
  const Dims b_dims = fold ? Dims{p.k, p.n} : Dims{bb, p.k, p.n};
  g->out_dims = fold ? Dims{p.batch * p.m, p.n} : Dims{p.batch, p.m, p.n};
  auto plain = [](const Dims& d) { return memory::desc(d, memory::data_type::f32, dense_strides(d)); };
  g->a_desc = plain(a_dims);
  g->b_user = plain(b_dims);
  g->y_desc = plain(g->out_dims);
  const memory::desc w_desc =
      g->const_b ? memory::desc(b_dims, memory::data_type::f32, memory::format_tag::any) : g->b_user;
  if (bias && !(fold && g->const_b)) {
    *why = "a MatMul bias without a constant B folded into one GEMM";
    return nullptr;
  }
  const memory::desc b_desc({1, p.n}, memory::data_type::f32, Dims{p.n, 1});
  g->has_bias = bias != nullptr;
  if (!g->make(ep, w_desc, bias ? &b_desc : nullptr, g->const_b && prec == Precision::kBf16, why)) return nullptr;
  if (bias) {
    g->bias = memory(b_desc, cpu_engine());
    std::memcpy(g->bias.get_data_handle(), bias, static_cast<size_t>(p.n) * sizeof(float));
  }
  if (g->squash >= 0 && g->const_b && (!all_finite(b_const, bb * p.k * p.n) || !all_finite(bias, bias ? p.n : 0))) {
    *why = "weights hold NaN or Inf, which the Relu/Clip post-op would not propagate";
    return nullptr;
  }
  if (g->const_b) g->load_weights(b_const, 1.f);
  g->a_count = ba * p.m * p.k;
  g->b_count = bb * p.k * p.n;
  g->reference = [p, b_const, bias](const float* a, const float* b, const Epilogue& e, float* y) {
    if (!bias) return matmul_fused(p, a, b_const ? b_const : b, e, y);
    Epilogue with_bias = e;  // the bias Add back in front, as the graph has it
    EpilogueStep add;
    add.op = EpOp::kAddTensor;
    add.mode = OperandMode::kPerChannel;
    add.operand = bias;
    with_bias.steps.insert(with_bias.steps.begin(), add);
    matmul_fused(p, a, b_const ? b_const : b, with_bias, y);
  };
  return g;
}

namespace {

class HorizontalImpl final : public HorizontalAnchor {
 public:
  std::unique_ptr<GemmAnchor> gemm;
  int64_t m = 0, total = 0;
  size_t fused_steps() const override { return 0; }
  std::string describe() const override { return gemm->describe() + "; member epilogues after it"; }

  void run(const float* a, std::vector<HorizontalMember>& members) const override {
    float* tile = scratch(4, static_cast<size_t>(m * total));
    gemm->run(a, nullptr, Epilogue(), tile);
    std::vector<cpu::detail::RowEpilogue> finish;
    finish.reserve(members.size());
    for (const HorizontalMember& mem : members) finish.emplace_back(mem.ep, mem.n);
    const int64_t block = 16, blocks = (m + block - 1) / block;
    const int team = m * total > (1 << 14) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(team) if (team > 1) schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t r0 = b * block, rows = std::min(block, m - r0);
      int64_t off = 0;
      for (size_t i = 0; i < members.size(); ++i) {
        const int64_t n = members[i].n;
        float* src = tile + r0 * total + off;
        finish[i].apply_rows(r0, rows, src, total);
        for (int64_t r = 0; r < rows; ++r) std::copy(src + r * total, src + r * total + n, members[i].y + (r0 + r) * n);
        off += n;
      }
    }
  }
};

}  // namespace

std::unique_ptr<HorizontalAnchor> HorizontalAnchor::create(int64_t m, int64_t k, const std::vector<int64_t>& widths,
                                                           const float* w_cat, const float* b_cat, std::string* why,
                                                           Precision prec) {
  auto h = std::make_unique<HorizontalImpl>();
  h->m = m;
  for (int64_t w : widths) h->total += w;
  GemmParams p;
  p.m = m, p.n = h->total, p.k = k, p.trans_b = true, p.c_rows = 1, p.c_cols = h->total;
  h->gemm = GemmAnchor::create_gemm(p, w_cat, b_cat, Epilogue(), why, prec);
  if (!h->gemm) return nullptr;
  return h;
}

}  // namespace fusert::cpu::onednn
