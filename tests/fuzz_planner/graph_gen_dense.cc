// Dense motifs on [M, K] activations: Gemms with every bias broadcast (none, [N], [1,N], [M,1],
// [M,N], scalar), transB, alpha/beta; wide groups of parallel Gemms on one input; LayerNorm and
// Softmax / LogSoftmax with residual prologues; MatMul; and Transformer blocks (attention in its ONNX-export
// decomposition, pre/post norm, with or without biases and masks).
#include <cmath>

#include "tests/fuzz_planner/graph_gen.h"

namespace fusert::fuzz {
namespace {

struct GemmSpec {
  int64_t n = 1;
  bool trans_b = true;
  float alpha = 1.f, beta = 1.f;
  int bias = 1;  // 0 none, 1 [N], 2 [1,N], 3 [M,1], 4 [M,N], 5 [1], 6 []
};

GemmSpec random_gemm(Rng& r) {
  GemmSpec s;
  s.n = r.pick(std::vector<int64_t>{1, 2, 3, 5, 8, 16, 33});
  s.trans_b = r.chance(0.7);
  if (r.chance(0.15)) s.alpha = 0.5f;
  if (r.chance(0.15)) s.beta = 2.f;
  s.bias = static_cast<int>(r.below(7));
  return s;
}

std::string fmt(float v) { return v == 1.f ? "1.0" : v == 0.5f ? "0.5" : "2.0"; }

std::string emit_gemm(Emitter& e, const std::string& x, const GemmSpec& s) {
  const Dims xs = e.shape(x);
  const int64_t m = xs[0], k = xs[1];
  std::vector<std::string> in = {x, e.weight(s.trans_b ? Dims{s.n, k} : Dims{k, s.n})};
  static const std::vector<Dims> kBias = {{}, {0}, {1, 0}, {-1, 1}, {-1, 0}, {1}, {}};
  if (s.bias != 0) {
    Dims c = kBias[static_cast<size_t>(s.bias)];
    for (int64_t& d : c) d = d == 0 ? s.n : d == -1 ? m : d;
    in.push_back(e.weight(c, "uniform"));
  }
  std::string attrs = "transB: " + std::to_string(s.trans_b ? 1 : 0);
  if (s.alpha != 1.f) attrs += ", alpha: " + fmt(s.alpha);
  if (s.beta != 1.f) attrs += ", beta: " + fmt(s.beta);
  return e.node("Gemm", in, {m, s.n}, attrs);
}

std::string layer_norm(Emitter& e, Rng& r, const std::string& x) {
  const int64_t c = e.shape(x).back();
  std::vector<std::string> in = {x, e.weight({c}, "bn_scale")};
  if (r.chance(0.7)) in.push_back(e.weight({c}, "uniform"));
  return e.node("LayerNormalization", in, e.shape(x),
                r.chance(0.5) ? "axis: -1, epsilon: 0.00001" : "axis: -1, epsilon: 0.001");
}

std::string gemm_chain(Emitter& e, Rng& r, const std::string& x) {
  std::string y = emit_gemm(e, x, random_gemm(r));
  if (r.chance(0.25)) {  // the activation behind a view (ONNX Runtime's Gemm wrapped in Reshapes): unary_hoist
    static const std::vector<std::string> acts = {"Gelu", "Relu", "Sigmoid", "Tanh", "HardSwish"};
    const Dims ys = e.shape(y);
    const std::string v = e.node("Reshape", {y, e.const_i64({ys[0], 1, ys[1]})}, {ys[0], 1, ys[1]});
    y = e.node("Reshape", {e.node(r.pick(acts), {v}, e.shape(v)), e.const_i64(ys)}, ys);
  }
  if (r.chance(0.7)) y = epilogue_chain(e, r, y, 3);
  if (r.chance(0.25)) y = layer_norm(e, r, y);
  if (r.chance(0.2)) y = e.node("Relu", {y}, e.shape(y));
  return y;
}

// 2-8 Gemms on one input (a horizontal group), each with its own bias pattern and chain.
std::string parallel_gemms(Emitter& e, Rng& r, const std::string& x) {
  const int64_t width = r.range(2, 8);
  const bool same = r.chance(0.7);
  GemmSpec base = random_gemm(r);
  std::vector<std::string> ys;
  for (int64_t i = 0; i < width; ++i) {
    GemmSpec s = same ? base : random_gemm(r);
    if (r.chance(0.5)) s.bias = static_cast<int>(r.below(7));
    std::string y = emit_gemm(e, x, s);
    int64_t tail = r.below(4);
    if (tail == 1) y = epilogue_chain(e, r, y, 2);
    if (tail == 2) y = layer_norm(e, r, y);
    if (tail == 3) y = layer_norm(e, r, e.node("Relu", {y}, e.shape(y)));
    ys.push_back(y);
  }
  int64_t how = r.below(3);
  if (how == 0) {
    Dims out = {e.shape(x)[0], 0};
    for (const std::string& y : ys) out[1] += e.shape(y)[1];
    return e.node("Concat", ys, out, "axis: 1");
  }
  if (how == 1 && same) {
    std::string y = ys[0];
    for (size_t i = 1; i < ys.size(); ++i) y = e.node(r.chance(0.7) ? "Add" : "Mul", {y, ys[i]}, e.shape(y));
    return y;
  }
  return ys.back();
}

// Post-norm LN(x + f(x)) or pre-norm x + f(LN(x)), f = Gemm -> act -> Gemm back to K.
std::string dense_residual(Emitter& e, Rng& r, std::string x) {
  if (!e.computed(x)) x = e.node("Relu", {x}, e.shape(x));
  const int64_t k = e.shape(x)[1];
  const bool pre = r.chance(0.5);
  std::string h = pre ? layer_norm(e, r, x) : x;
  GemmSpec a = random_gemm(r), b = random_gemm(r);
  a.bias = r.chance(0.7) ? 1 : 0;
  b.bias = r.chance(0.7) ? 1 : 0;
  b.n = k;
  h = emit_gemm(e, h, a);
  h = r.chance(0.5) ? e.node("Gelu", {h}, e.shape(h)) : e.node("Relu", {h}, e.shape(h));
  h = emit_gemm(e, h, b);
  std::string y = r.chance(0.5) ? e.node("Add", {x, h}, e.shape(x)) : e.node("Add", {h, x}, e.shape(x));
  return pre ? y : layer_norm(e, r, y);
}

std::string softmax(Emitter& e, Rng& r, std::string x) {
  if (r.chance(0.5)) x = e.node("Mul", {x, e.weight(broadcast_shape(r, e.shape(x)), "uniform")}, e.shape(x));
  // LogSoftmax a quarter of the time (a classifier's or CTC head's last op). Hardmax is not drawn:
  // it is opaque (never in a fusion group), and a near tie would flip between two correct GEMMs.
  return e.node(r.chance(0.25) ? "LogSoftmax" : "Softmax", {x}, e.shape(x), "axis: -1");
}

// MatMul by a weight, on x [M, K] or on a rank-3 view of it: [B, M / B, K] (a Linear layer on
// batched tokens) or [M, 1, K] (torchvision's sequence-first attention input). The epilogue's
// operands then broadcast over three dims (per column [N] / [1, 1, N], per row [B, S, 1], ...).
std::string matmul(Emitter& e, Rng& r, const std::string& x) {
  const Dims xs = e.shape(x);
  int64_t n = r.range(1, 12);
  if (r.chance(0.5)) {
    std::string y = e.node("MatMul", {x, e.weight({xs[1], n})}, {xs[0], n});
    return r.chance(0.6) ? epilogue_chain(e, r, y, 2) : y;
  }
  std::vector<int64_t> divs;
  for (int64_t d = 1; d <= xs[0]; ++d)
    if (xs[0] % d == 0) divs.push_back(d);
  const int64_t b = r.chance(0.3) ? xs[0] : r.pick(divs), s = xs[0] / b;
  const std::string x3 = e.node("Reshape", {x, e.const_i64({b, s, xs[1]})}, {b, s, xs[1]});
  std::string y = e.node("MatMul", {x3, e.weight({xs[1], n})}, {b, s, n});
  if (r.chance(0.8)) y = epilogue_chain(e, r, y, 3);
  return e.node("Reshape", {y, e.const_i64({xs[0], n})}, {xs[0], n});
}

// The running value as operand B: Gemm(W [P, M], x [M, K]) or MatMul(W, x), beside a sibling
// that reads x as operand A, so that sibling detection must look at the operand position.
std::string operand_b(Emitter& e, Rng& r, const std::string& x) {
  const Dims xs = e.shape(x);
  const int64_t p = r.range(1, 9);
  std::string y;
  if (r.chance(0.5)) {
    std::vector<std::string> in = {e.weight({p, xs[0]}), x};
    if (r.chance(0.5)) in.push_back(e.weight({p, xs[1]}, "uniform"));
    y = e.node("Gemm", in, {p, xs[1]});
  } else {
    y = e.node("MatMul", {e.weight({p, xs[0]}), x}, {p, xs[1]});
  }
  if (r.chance(0.5)) {
    GemmSpec s = random_gemm(r);
    s.n = xs[1];
    e.mark_output(emit_gemm(e, x, s));
  }
  return r.chance(0.5) ? epilogue_chain(e, r, y, 2) : y;
}

// A Gemm output [M, N] joined with a computed per-row [M, 1] or per-column [1, N] tensor.
std::string dense_broadcast_join(Emitter& e, Rng& r, std::string x) {
  if (!e.computed(x)) x = e.node("Relu", {x}, e.shape(x));
  const Dims xs = e.shape(x);
  GemmSpec s = random_gemm(r);
  std::string other;
  if (r.chance(0.5)) {  // per row: a width-1 Gemm
    GemmSpec one = random_gemm(r);
    one.n = 1;
    other = emit_gemm(e, x, one);
  } else {  // per column: W [1, M] @ x, so N = K
    s.n = xs[1];
    other = e.node("MatMul", {e.weight({1, xs[0]}), x}, {1, xs[1]});
  }
  std::string y = emit_gemm(e, x, s);
  if (r.chance(0.5)) y = e.node("Relu", {y}, e.shape(y));
  if (r.chance(0.4)) other = e.node("Tanh", {other}, e.shape(other));
  static const std::vector<std::string> joins = {"Add", "Mul", "Sub"};
  const std::string& op = r.pick(joins);
  y = r.chance(0.5) ? e.node(op, {y, other}, e.shape(y)) : e.node(op, {other, y}, e.shape(y));
  return r.chance(0.4) ? layer_norm(e, r, y) : y;
}

}  // namespace

void dense_motif(Emitter& e, Rng& r, std::string& cur, std::string* name) {
  int64_t k = r.below(100);
  if (k < 30)
    *name = "gemm_chain", cur = gemm_chain(e, r, cur);
  else if (k < 55)
    *name = "parallel_gemms", cur = parallel_gemms(e, r, cur);
  else if (k < 70)
    *name = "dense_residual", cur = dense_residual(e, r, cur);
  else if (k < 78)
    *name = "layer_norm", cur = layer_norm(e, r, cur);
  else if (k < 85)
    *name = "softmax", cur = softmax(e, r, cur);
  else if (k < 90)
    *name = "matmul", cur = matmul(e, r, cur);
  else if (k < 94)
    *name = "operand_b", cur = operand_b(e, r, cur);
  else if (k < 98)
    *name = "dense_broadcast_join", cur = dense_broadcast_join(e, r, cur);
  else
    *name = "elementwise", cur = epilogue_chain(e, r, cur, 4);
}

namespace {

// Multi-head self-attention on x [B*S, H*D] as torch.onnx.export decomposes it.
std::string attention(Emitter& e, Rng& r, const std::string& x, int64_t batch, int64_t seq, int64_t heads, int64_t hd,
                      bool bias) {
  const int64_t t = batch * seq, d = heads * hd;
  GemmSpec lin;
  lin.n = d;
  lin.bias = bias ? 1 : 0;
  std::string q = emit_gemm(e, x, lin), k = emit_gemm(e, x, lin), v = emit_gemm(e, x, lin);
  std::string bshd = e.const_i64({batch, seq, heads, hd});
  const Dims s4 = {batch, seq, heads, hd}, bhsd = {batch, heads, seq, hd}, bhds = {batch, heads, hd, seq};
  q = e.node("Transpose", {e.node("Reshape", {q, bshd}, s4)}, bhsd, "perm: [0, 2, 1, 3]");
  std::string kr = e.node("Reshape", {k, bshd}, s4);
  if (r.chance(0.7)) {
    k = e.node("Transpose", {kr}, bhds, "perm: [0, 2, 3, 1]");
  } else {
    k = e.node("Transpose", {e.node("Transpose", {kr}, bhsd, "perm: [0, 2, 1, 3]")}, bhds, "perm: [0, 1, 3, 2]");
  }
  v = e.node("Transpose", {e.node("Reshape", {v, bshd}, s4)}, bhsd, "perm: [0, 2, 1, 3]");
  const Dims ss = {batch, heads, seq, seq};
  std::string s = e.node("MatMul", {q, k}, ss);
  int64_t scale = r.below(3);
  if (scale == 0) s = e.node("Div", {s, e.const_f32(std::sqrt(static_cast<float>(hd)))}, ss);
  if (scale == 1) s = e.node("Mul", {s, e.const_f32(1.f / std::sqrt(static_cast<float>(hd)))}, ss);
  int64_t mask = r.below(4);
  if (mask == 0) s = e.node("Add", {s, e.input({batch, 1, 1, seq})}, ss);
  if (mask == 1) s = e.node("Add", {s, e.input({1, 1, 1, seq})}, ss);
  if (mask == 2) s = e.node("Add", {s, e.input({batch, 1, seq, seq})}, ss);
  s = e.node("Softmax", {s}, ss, "axis: -1");
  std::string c = e.node("MatMul", {s, v}, bhsd);
  c = e.node("Transpose", {c}, s4, "perm: [0, 2, 1, 3]");
  c = e.node("Reshape", {c, e.const_i64({t, d})}, {t, d});
  return emit_gemm(e, c, lin);
}

}  // namespace

void transformer_motif(Emitter& e, Rng& r, std::string& cur, int64_t batch, int64_t seq, std::string* name) {
  const int64_t d = e.shape(cur)[1];
  std::vector<int64_t> heads;
  for (int64_t h : {1, 2, 4})
    if (d % h == 0) heads.push_back(h);
  const int64_t h = r.pick(heads);
  const bool bias = r.chance(0.8), pre = r.chance(0.5);
  if (r.chance(0.25)) {  // a dense motif between blocks keeps the width
    std::string x = cur;
    dense_motif(e, r, x, name);
    if (e.shape(x) == e.shape(cur)) cur = x;
    *name = "dense:" + *name;
    return;
  }
  *name = std::string(pre ? "pre" : "post") + "_norm_block" + (bias ? "" : "_nobias");
  std::string x = e.computed(cur) ? cur : e.node("Relu", {cur}, e.shape(cur));
  std::string a = attention(e, r, pre ? layer_norm(e, r, x) : x, batch, seq, h, d / h, bias);
  std::string y =
      e.node("Add", r.chance(0.5) ? std::vector<std::string>{x, a} : std::vector<std::string>{a, x}, e.shape(x));
  if (!pre) y = layer_norm(e, r, y);
  GemmSpec f1, f2;
  f1.n = 2 * d, f2.n = d;
  f1.bias = f2.bias = bias ? 1 : 0;
  std::string f = emit_gemm(e, pre ? layer_norm(e, r, y) : y, f1);
  f = e.node("Gelu", {f}, e.shape(f), r.chance(0.5) ? "" : "approximate: tanh");
  f = emit_gemm(e, f, f2);
  std::string z =
      e.node("Add", r.chance(0.5) ? std::vector<std::string>{y, f} : std::vector<std::string>{f, y}, e.shape(y));
  cur = pre ? z : layer_norm(e, r, z);
}

}  // namespace fusert::fuzz
