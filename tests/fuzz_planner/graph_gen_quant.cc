// QDQ networks for the planner fuzzer (family "qdq"): the patterns ONNX Runtime's quantize_static
// writes, which fusert's rewrites read as QLinearConv (graph/passes/qdq_conv_rule.cc, and the Gemm
// of a classifier head: qdq_gemm.cc), QLinearAdd (qdq_add_rule.cc) and the 8-bit MaxPool
// (qdq_maxpool_rule.cc). Scales are drawn so that the 8-bit
// values use most of their range: weights s8 at about 1 / (127 sqrt(K)) per channel, activations at
// 0.005-0.012 (u8 with a zero point near 128, or s8 near 0).
#include <algorithm>
#include <cmath>

#include "tests/fuzz_planner/graph_gen.h"

namespace fusert::fuzz {
namespace {

/// A quantised value: the 8-bit tensor and its per-tensor scale and zero point (constants).
struct QVal {
  std::string v, scale, zp;
  float s = 1;
  bool s8 = false;  // int8, else uint8
};

// Scales that are powers of two (one graph in three): their ratios are powers of two too, so a
// requantised product often lands on .5 exactly, which the rounding (half to even, before the zero
// point is added) must get right. A thread-local flag: set per graph by qdq_graph.
thread_local bool g_pow2 = false;

float scale_of(float s) { return g_pow2 ? std::exp2(std::round(std::log2(s))) : s; }

float uniform(Rng& r, float lo, float hi) {
  return scale_of(lo + (hi - lo) * static_cast<float>(r.below(1 << 20)) / (1 << 20));
}

std::string dequantize(Emitter& e, const QVal& q) {
  return e.node("DequantizeLinear", {q.v, q.scale, q.zp}, e.shape(q.v));
}

// x quantised at `scale`: uint8 (zero point near 128) or int8 (near 0), drawn, or the type of `like`
// (a convolution's or a Gemm's output has its input's type, as quantize_static writes it and ONNX
// Runtime requires to fuse; qdq::ort_types).
// With `floor`, the zero point is the type's lowest value: a Relu or Clip(0, 6) before it is then
// redundant with y's range (what quantize_static calibrates; ONNX Runtime drops it and fuses the
// anchor: qdq::ort_drops_activation).
QVal quantize(Emitter& e, Rng& r, const std::string& x, float scale, const QVal* like = nullptr, bool floor = false) {
  QVal q;
  q.s = scale;
  q.scale = e.const_f32(scale);
  q.s8 = like ? like->s8 : !r.chance(0.7);
  if (floor)
    q.zp = q.s8 ? e.const_ints("i8", {}, {-128}) : e.const_ints("u8", {}, {0});
  else
    q.zp = q.s8 ? e.const_ints("i8", {}, {r.range(-10, 10)}) : e.const_ints("u8", {}, {r.range(100, 150)});
  q.v = e.node("QuantizeLinear", {x, q.scale, q.zp}, e.shape(x));
  return q;
}

// [Relu | Clip(0, 6)] or nothing: the activations the rewrites fold into the clamp.
std::string activation(Emitter& e, Rng& r, const std::string& x) {
  const int64_t k = r.below(5);
  if (k < 2) return x;
  if (k < 4) return e.node("Relu", {x}, e.shape(x));
  return r.chance(0.5) ? e.node("Clip", {x}, e.shape(x), "min: 0.0, max: 6.0")
                       : e.node("Clip", {x, e.const_f32(0.0f), e.const_f32(6.0f)}, e.shape(x));
}

// DequantizeLinear -> Conv (s8 weights, per channel or per tensor; an int32 bias at sx * sw) ->
// activation -> QuantizeLinear.
QVal qconv(Emitter& e, Rng& r, const QVal& x, const ConvSpec& c) {
  const Dims& xs = e.shape(x.v);
  const int64_t k = xs[1] / c.group * c.kh * c.kw;
  std::vector<int64_t> w(static_cast<size_t>(c.m * k));
  for (int64_t& v : w) v = r.range(-127, 127);
  const bool per_channel = r.chance(0.7);
  std::vector<float> sw(static_cast<size_t>(per_channel ? c.m : 1));
  for (float& s : sw) s = scale_of(uniform(r, 0.5f, 1.5f) / (127.f * std::sqrt(static_cast<float>(k))));
  const Dims zs = per_channel ? Dims{c.m} : Dims{};
  std::vector<int64_t> zw(sw.size(), 0);
  if (r.chance(0.1))  // a weight zero point other than 0: the reference kernel, not oneDNN's
    for (int64_t& z : zw) z = r.range(-3, 3);
  const std::string wq = e.const_ints("i8", {c.m, xs[1] / c.group, c.kh, c.kw}, w);
  const std::string sw_c = per_channel ? e.const_f32s(sw) : e.const_f32(sw[0]);
  const std::string wd =
      e.node("DequantizeLinear", {wq, sw_c, e.const_ints("i8", zs, zw)}, e.shape(wq), per_channel ? "axis: 0" : "");
  std::vector<std::string> in = {dequantize(e, x), wd};
  if (c.bias) {
    std::vector<int64_t> b(static_cast<size_t>(c.m));
    for (int64_t& v : b) v = r.range(-2000, 2000);
    std::vector<float> sb;
    for (float s : sw) sb.push_back(x.s * s);
    const std::string bq = e.const_ints("i32", {c.m}, b);
    in.push_back(e.node("DequantizeLinear", {bq, per_channel ? e.const_f32s(sb) : e.const_f32(sb[0])}, {c.m},
                        per_channel ? "axis: 0" : ""));
  }
  const std::string conv = e.node("Conv", in, conv_out(xs, c), conv_attrs(c)), y = activation(e, r, conv);
  return quantize(e, r, y, uniform(r, 0.005f, 0.012f), &x, y != conv);  // 255 * 0.012 < 6: Clip(0, 6) drops
}

// DequantizeLinear a and b -> Add -> activation -> QuantizeLinear (a skip connection).
QVal qadd(Emitter& e, Rng& r, const QVal& a, const QVal& b) {
  const std::string s = e.node("Add", {dequantize(e, a), dequantize(e, b)}, e.shape(a.v));
  return quantize(e, r, activation(e, r, s), uniform(r, 0.008f, 0.016f));
}

// DequantizeLinear -> MaxPool -> QuantizeLinear with the same scale and zero point.
QVal qmaxpool(Emitter& e, Rng& r, const QVal& x) {
  const Dims& xs = e.shape(x.v);
  const bool three = r.chance(0.5) && xs[2] >= 2 && xs[3] >= 2;
  const int64_t k = three ? 3 : std::min<int64_t>(2, std::min(xs[2], xs[3])), p = three ? 1 : 0;
  const int64_t s = xs[2] >= 4 && xs[3] >= 4 ? 2 : 1;
  const Dims ys = {xs[0], xs[1], (xs[2] + 2 * p - k) / s + 1, (xs[3] + 2 * p - k) / s + 1};
  const std::string attrs =
      "kernel_shape: " + shape_str({k, k}) + ", strides: " + shape_str({s, s}) + ", pads: " + shape_str({p, p, p, p});
  const std::string y = e.node("MaxPool", {dequantize(e, x)}, ys, attrs);
  QVal q = x;
  q.v = e.node("QuantizeLinear", {y, x.scale, x.zp}, ys);
  return q;
}

// The classifier head (the last motif: it leaves a matrix): DequantizeLinear -> [GlobalAveragePool]
// -> Flatten -> QuantizeLinear -> DequantizeLinear -> Gemm (s8 weights [N, K] or [K, N], per column
// or per tensor, an int32 bias or none) -> activation -> QuantizeLinear: read as a 1x1 QLinearConv
// (graph/passes/qdq_gemm.cc). Now and then alpha 0.5, which the rewrite refuses.
QVal qgemm(Emitter& e, Rng& r, const QVal& x) {
  const Dims xs = e.shape(x.v);
  const bool pool = r.chance(0.3);  // else the whole feature map flattened: values not averaged away
  const int64_t k = pool ? xs[1] : xs[1] * xs[2] * xs[3], n = r.pick(std::vector<int64_t>{1, 3, 8, 17, 40});
  std::string f = dequantize(e, x);
  if (pool) f = e.node("GlobalAveragePool", {f}, {xs[0], xs[1], 1, 1});
  const QVal a = quantize(e, r, e.node("Flatten", {f}, {xs[0], k}), uniform(r, 0.008f, 0.016f));
  const bool trans_b = r.chance(0.6), per_col = r.chance(0.7);
  std::vector<int64_t> w(static_cast<size_t>(n * k));
  for (int64_t& v : w) v = r.range(-127, 127);
  std::vector<float> sw(static_cast<size_t>(per_col ? n : 1));
  for (float& s : sw)  // outputs a few times x's size: a wrong weight shows through the rounding
    s = scale_of(uniform(r, 2.f, 5.f) / (127.f * std::sqrt(static_cast<float>(k))));
  const std::string wq = e.const_ints("i8", trans_b ? Dims{n, k} : Dims{k, n}, w);
  const std::string axis = per_col ? (trans_b ? "axis: 0" : "axis: 1") : "";
  const std::string wd = e.node("DequantizeLinear",
                                {wq, per_col ? e.const_f32s(sw) : e.const_f32(sw[0]),
                                 e.const_ints("i8", per_col ? Dims{n} : Dims{}, std::vector<int64_t>(sw.size(), 0))},
                                e.shape(wq), axis);
  std::vector<std::string> in = {dequantize(e, a), wd};
  if (r.chance(0.8)) {
    std::vector<int64_t> b(static_cast<size_t>(n));
    for (int64_t& v : b) v = r.range(-8000, 8000);  // a few output quanta
    std::vector<float> sb;
    for (float s : sw) sb.push_back(a.s * s);
    in.push_back(e.node("DequantizeLinear",
                        {e.const_ints("i32", {n}, b), per_col ? e.const_f32s(sb) : e.const_f32(sb[0])}, {n},
                        per_col ? "axis: 0" : ""));
  }
  const std::string attrs = std::string("transB: ") + (trans_b ? "1" : "0") + (r.chance(0.1) ? ", alpha: 0.5" : "");
  const std::string gemm = e.node("Gemm", in, {xs[0], n}, attrs), y = activation(e, r, gemm);
  return quantize(e, r, y, uniform(r, 0.01f, 0.02f), &a, y != gemm);  // 255 * 0.02 < 6 (2^-6 as a power of two)
}

// One motif on the running value `cur`; `seen` holds the earlier quantised values (skip partners).
void qdq_motif(Emitter& e, Rng& r, QVal& cur, std::vector<QVal>& seen, std::string* name) {
  const Dims xs = e.shape(cur.v);
  const int64_t k = r.below(10);
  if (k < 2) {  // an inverted residual: 1x1 expand, depthwise 3x3, 1x1 project, the skip Add
    ConvSpec pw;
    pw.m = xs[1] * r.range(2, 4);
    QVal t = qconv(e, r, cur, pw);
    ConvSpec dw;
    dw.m = dw.group = pw.m, dw.kh = dw.kw = 3, dw.pt = dw.pl = dw.pb = dw.pr = 1;
    t = qconv(e, r, t, dw);
    ConvSpec pj;
    pj.m = xs[1];
    t = qconv(e, r, t, pj);
    *name = "qdq_inverted_residual", cur = qadd(e, r, cur, t);
  } else if (k < 3) {
    *name = "qdq_maxpool", cur = qmaxpool(e, r, cur);
  } else if (k < 5) {
    std::vector<QVal> partners;
    for (const QVal& q : seen)
      if (e.shape(q.v) == xs && q.v != cur.v) partners.push_back(q);
    if (partners.empty()) {
      ConvSpec same;
      same.m = xs[1], same.kh = same.kw = 3, same.pt = same.pl = same.pb = same.pr = 1;
      partners.push_back(qconv(e, r, cur, same));
    }
    *name = "qdq_add", cur = qadd(e, r, cur, r.pick(partners));
  } else {
    *name = "qdq_conv", cur = qconv(e, r, cur, random_conv(r, xs));
  }
  seen.push_back(cur);
}

}  // namespace

bool is_qdq_seed(uint64_t seed) {
  Rng r(seed * 0xD1B54A32D192ED03ull + 0x7F4A7C15u);
  return r.chance(0.12);
}

void qdq_graph(Emitter& e, uint64_t seed, const std::set<int>& skip, GenGraph* out) {
  Rng top(seed * 0xD1B54A32D192ED03ull + 0x2545F491u);
  out->family = "qdq";
  g_pow2 = top.chance(0.35);
  const std::string x = e.input({top.range(1, 2), top.range(1, 8), top.range(3, 12), top.range(3, 12)});
  QVal cur = quantize(e, top, x, scale_of(2.f / 255));  // seeded inputs lie in [-1, 1]
  std::vector<QVal> seen = {cur};
  const int motifs = static_cast<int>(top.range(1, 6));
  for (int i = 0; i < motifs; ++i) {
    Rng r(seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(i + 1) * 0xBF58476D1CE4E5B9ull);
    std::string name;
    if (skip.count(i)) {  // drawn on a copy: a skipped motif leaves the others as they were
      Emitter scratch = e;
      QVal c = cur;
      std::vector<QVal> s = seen;
      qdq_motif(scratch, r, c, s, &name);
    } else {
      qdq_motif(e, r, cur, seen, &name);
    }
    out->motifs.push_back(name + (skip.count(i) ? " (skipped)" : ""));
    if (top.chance(0.15) && !skip.count(i)) e.mark_output(dequantize(e, cur));
  }
  if (top.chance(0.3)) {  // a classifier head last (motif index `motifs`, so the shrinker can skip it)
    Rng r(seed * 0x94D049BB133111EBull + 0x3C6EF372u);
    Emitter scratch = e;
    const QVal head = qgemm(skip.count(motifs) ? scratch : e, r, cur);
    if (!skip.count(motifs)) cur = head;
    out->motifs.push_back(std::string("qdq_gemm") + (skip.count(motifs) ? " (skipped)" : ""));
  }
  dequantize(e, cur);  // the output, in f32
  std::string header = "# fuzz_planner: seed " + std::to_string(seed) + ", family qdq" +
                       (g_pow2 ? " (power-of-two scales)" : "") + ", motifs:";
  for (const std::string& m : out->motifs) header += " " + m + ";";
  out->yaml = e.yaml("fuzz_" + std::to_string(seed), header + "\n");
  out->nodes = e.nodes();
}

}  // namespace fusert::fuzz
