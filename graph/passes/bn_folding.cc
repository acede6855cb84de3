// BatchNormalization folding into the preceding Conv (any group count: the output channel is
// always weight dim 0), ConvTranspose (output channel from weight dims 0 and 1 and the group) or
// Gemm (BN over axis 1 of [M, N], the output columns); and an Add of a per-channel constant after a
// ConvTranspose into its bias (the BN after it then folds on the next sweep).
//
//   before:  x -> Conv(W, b) -> t -> BatchNormalization(scale, beta, mean, var, eps) -> y
//   after:   x -> Conv(W', b') -> y
//
// Legal only when t's one reader is the BN and t is not a graph output (else t must still be
// materialised), and W, b and the four BN tensors are bound initializers (not graph inputs).
// The folded tensors are new initializers, so weights another node shares stay untouched (a
// weight read only by the folded conv is scaled in place: it is dead after the fold).
// dead_code drops the originals once unused. Arithmetic in double, rounded once to f32.
#include <cmath>

#include "graph/analysis/use_def.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/pass.h"

namespace fusert {

namespace {

// The BN's per-channel tensors as doubles, with s = scale / sqrt(var + eps).
struct BnParams {
  std::vector<double> s, mean, beta;
};

bool read_bn(const Graph& g, const Node& bn, int64_t channels, BnParams* p) {
  const Tensor* t[4];
  for (int k = 0; k < 4; ++k) {
    t[k] = fixed_data(g, bn.inputs[static_cast<size_t>(k) + 1]);
    if (!t[k] || t[k]->dtype() != DType::kF32 || t[k]->numel() != channels) return false;
  }
  const double eps = bn.attr_f("epsilon");  // this BN's own epsilon, not the op default
  for (int64_t c = 0; c < channels; ++c) {
    p->s.push_back(t[0]->f32()[c] / std::sqrt(static_cast<double>(t[3]->f32()[c]) + eps));
    p->beta.push_back(t[1]->f32()[c]);
    p->mean.push_back(t[2]->f32()[c]);
  }
  return true;
}

const Tensor* f32_data(const Graph& g, ValueId v) {
  const Tensor* t = fixed_data(g, v);
  return t && t->dtype() == DType::kF32 ? t : nullptr;
}

class BnFoldingPass : public Pass {
 public:
  const char* name() const override { return "bn_folding"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    folded_.clear();
    bool changed = false;
    while (fold_once(g)) changed = true;  // conv -> bn -> bn folds one BN per sweep
    if (changed) {
      std::string s = "folded " + (folded_.size() > 1 ? std::to_string(folded_.size()) + ": " : std::string());
      for (size_t k = 0; k < folded_.size() && k < 4; ++k) s += (k ? ", " : "") + folded_[k];
      note(s + (folded_.size() > 4 ? ", ..." : ""));
    }
    return changed;
  }

 private:
  bool fold_once(Graph& g) {
    std::vector<bool> erased(g.nodes.size(), false);
    bool changed = false;
    UseDef ud(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      const bool bn = n.op == OpKind::kBatchNormalization, add = n.op == OpKind::kAdd && n.inputs.size() == 2;
      if (!bn && !add) continue;
      for (size_t side = 0; side < (add ? 2u : 1u); ++side) {
        const ValueId t = n.inputs[side];
        const int p = ud.producer(t);
        // Links are stale within a sweep: a producer already folded into waits for the next.
        if (p < 0 || erased[static_cast<size_t>(p)] || !ud.single_use(t)) continue;
        Node& prod = g.nodes[static_cast<size_t>(p)];
        bool ok = false;
        if (add) {
          ok = prod.op == OpKind::kConvTranspose && fold_bias_add(g, prod, n, n.inputs[1 - side]);
        } else {
          ok = prod.op == OpKind::kConv            ? fold_conv(g, prod, n)
               : prod.op == OpKind::kConvTranspose ? fold_conv_transpose(g, prod, n)
                                                   : prod.op == OpKind::kGemm && fold_gemm(g, prod, n);
        }
        if (!ok) continue;
        prod.outputs[0] = n.outputs[0];  // the producer now writes the folded node's output name
        erased[i] = true;
        changed = true;
        folded_.push_back(n.name + " into " + prod.name);
        break;
      }
    }
    if (changed) erase_nodes(g, erased);
    return changed;
  }

  // ConvTranspose + Add of a per-channel constant k ([M, 1, 1] or [1, M, 1, 1], as Paddle's
  // exports write the bias): b'[m] = b[m] + k[m]. The Add must not broadcast the conv's output.
  static bool fold_bias_add(Graph& g, Node& ct, const Node& add, ValueId k) {
    const Tensor* kt = f32_data(g, k);
    const bool has_b = ct.inputs.size() > 2 && ct.inputs[2] != kNoValue;
    const Tensor* b = has_b ? f32_data(g, ct.inputs[2]) : nullptr;
    const Shape ys = g.value(ct.outputs[0]).shape;
    if (!kt || (has_b && !b) || ys.size() != 4 || g.value(add.outputs[0]).shape != ys) return false;
    const int64_t m = ys[1];
    const Shape& ks = kt->shape();
    const bool per_channel = (ks == Shape{m, 1, 1} || ks == Shape{1, m, 1, 1});
    if (!per_channel || (b && b->numel() != m)) return false;
    Tensor b2(DType::kF32, {m});
    for (int64_t o = 0; o < m; ++o) b2.f32()[o] = (b ? b->f32()[o] : 0.0f) + kt->f32()[o];
    const SourceLoc loc = ct.loc;
    const ValueId bid =
        add_initializer(g, unique_value_name(g, ct.name + ".bias_add_folded"), std::move(b2), false, loc);
    if (ct.inputs.size() < 3) ct.inputs.resize(3, kNoValue);
    ct.inputs[2] = bid;
    return true;
  }

  // Conv: W'[m, ...] = W[m, ...] * s[m];  b'[m] = (b[m] - mean[m]) * s[m] + beta[m]  (b = 0
  // when the conv has none: a bias input is added).
  static bool fold_conv(Graph& g, Node& conv, const Node& bn) {
    const Tensor* w = f32_data(g, conv.inputs[1]);
    const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] != kNoValue;
    const Tensor* b = has_b ? f32_data(g, conv.inputs[2]) : nullptr;
    if (!w || w->shape().empty() || (has_b && !b)) return false;
    const int64_t m = w->shape()[0], per = w->numel() / std::max<int64_t>(m, 1);
    BnParams p;
    if ((b && b->numel() != m) || !read_bn(g, bn, m, &p)) return false;
    // A weight read only by this conv (and not shared by another tensor handle's reader) is
    // scaled in place: the original initializer is dead after the fold (dead_code drops it), and
    // writing 100 MB of fresh pages for ResNet-50 costs more than the arithmetic.
    const bool in_place = g.value(conv.inputs[1]).consumers.size() == 1 && !g.value(conv.inputs[1]).is_constant;
    Tensor w2 = in_place ? *w : Tensor(DType::kF32, w->shape()), b2(DType::kF32, {m});
#pragma omp parallel for schedule(static) if (m * per > (1 << 18))
    for (int64_t c = 0; c < m; ++c) {
      for (int64_t k = 0; k < per; ++k) {
        w2.f32()[c * per + k] = static_cast<float>(w->f32()[c * per + k] * p.s[static_cast<size_t>(c)]);
      }
      double bias = b ? b->f32()[c] : 0.0;
      b2.f32()[c] = static_cast<float>((bias - p.mean[static_cast<size_t>(c)]) * p.s[static_cast<size_t>(c)] +
                                       p.beta[static_cast<size_t>(c)]);
    }
    set_folded(g, conv, std::move(w2), std::move(b2));
    return true;
  }

  // ConvTranspose, W [C, M/group, KH, KW]: output channel m = (c / (C/group)) * (M/group) + j
  // for W[c, j, ...]; W'[c, j, ...] = W[c, j, ...] * s[m], b' as for Conv.
  static bool fold_conv_transpose(Graph& g, Node& ct, const Node& bn) {
    const Tensor* w = f32_data(g, ct.inputs[1]);
    const bool has_b = ct.inputs.size() > 2 && ct.inputs[2] != kNoValue;
    const Tensor* b = has_b ? f32_data(g, ct.inputs[2]) : nullptr;
    const int64_t group = ct.attr_i("group");
    if (!w || w->shape().size() < 2 || (has_b && !b) || group < 1 || w->shape()[0] % group != 0) return false;
    const int64_t c = w->shape()[0], mg = w->shape()[1], m = mg * group, cg = c / group;
    const int64_t per = mg > 0 && c > 0 ? w->numel() / (c * mg) : 0;
    BnParams p;
    if ((b && b->numel() != m) || !read_bn(g, bn, m, &p)) return false;
    Tensor w2(DType::kF32, w->shape()), b2(DType::kF32, {m});
    for (int64_t ci = 0; ci < c; ++ci) {
      for (int64_t j = 0; j < mg; ++j) {
        const size_t out = static_cast<size_t>((ci / cg) * mg + j);
        for (int64_t k = 0; k < per; ++k) {
          const int64_t at = (ci * mg + j) * per + k;
          w2.f32()[at] = static_cast<float>(w->f32()[at] * p.s[out]);
        }
      }
    }
    for (int64_t o = 0; o < m; ++o) {
      const size_t j = static_cast<size_t>(o);
      b2.f32()[o] = static_cast<float>(((b ? b->f32()[o] : 0.0) - p.mean[j]) * p.s[j] + p.beta[j]);
    }
    set_folded(g, ct, std::move(w2), std::move(b2));
    return true;
  }

  // Gemm Y = alpha * A' B' + beta * C, BN over the N columns of Y:
  //   B'[:, n] *= s[n]  (row n of B when transB=1, column n when transB=0);
  //   C'[m, n] = (beta * C[m, n] - mean[n]) * s[n] + bn_beta[n], and the Gemm's beta becomes 1.
  // C' is [N] unless C varies along M, then [M, N].
  static bool fold_gemm(Graph& g, Node& gemm, const Node& bn) {
    const Tensor* w = f32_data(g, gemm.inputs[1]);
    const bool has_c = gemm.inputs.size() > 2 && gemm.inputs[2] != kNoValue;
    const Tensor* c = has_c ? f32_data(g, gemm.inputs[2]) : nullptr;
    if (!w || w->shape().size() != 2 || (has_c && !c)) return false;
    const bool tb = gemm.attr_i("transB") != 0;
    const int64_t n = tb ? w->shape()[0] : w->shape()[1];
    const int64_t rows = g.value(gemm.outputs[0]).shape[0];
    BnParams p;
    if (!read_bn(g, bn, n, &p)) return false;
    Tensor w2(DType::kF32, w->shape());
    for (int64_t r = 0; r < w->shape()[0]; ++r) {
      for (int64_t q = 0; q < w->shape()[1]; ++q) {
        const int64_t col = tb ? r : q;  // the output column this element feeds
        w2.f32()[r * w->shape()[1] + q] =
            static_cast<float>(w->f32()[r * w->shape()[1] + q] * p.s[static_cast<size_t>(col)]);
      }
    }
    // C as [cm, cn] with broadcast dims of size 1.
    const Shape cs = c ? c->shape() : Shape{};
    const int64_t cm = cs.size() == 2 ? cs[0] : 1, cn = cs.empty() ? 1 : cs.back();
    const int64_t out_m = cm > 1 ? rows : 1;
    const double beta = gemm.attr_f("beta");
    Tensor c2(DType::kF32, out_m > 1 ? Shape{out_m, n} : Shape{n});
    for (int64_t r = 0; r < out_m; ++r) {
      for (int64_t col = 0; col < n; ++col) {
        double cv = c ? c->f32()[(cm > 1 ? r : 0) * cn + (cn > 1 ? col : 0)] : 0.0;
        const size_t j = static_cast<size_t>(col);
        c2.f32()[r * n + col] = static_cast<float>((beta * cv - p.mean[j]) * p.s[j] + p.beta[j]);
      }
    }
    gemm.attrs["beta"].f = 1.0;
    set_folded(g, gemm, std::move(w2), std::move(c2));
    return true;
  }

  static void set_folded(Graph& g, Node& n, Tensor w, Tensor b) {
    const SourceLoc loc = n.loc;
    ValueId wid = add_initializer(g, unique_value_name(g, n.name + ".weight_bn_folded"), std::move(w), false, loc);
    ValueId bid = add_initializer(g, unique_value_name(g, n.name + ".bias_bn_folded"), std::move(b), false, loc);
    n.inputs[1] = wid;
    if (n.inputs.size() < 3) n.inputs.resize(3, kNoValue);
    n.inputs[2] = bid;
  }

  std::vector<std::string> folded_;  // "bn into conv", for the summary
};

}  // namespace

std::unique_ptr<Pass> make_bn_folding_pass() { return std::make_unique<BnFoldingPass>(); }

}  // namespace fusert
