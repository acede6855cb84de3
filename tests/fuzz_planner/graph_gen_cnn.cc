// CNN motifs on NCHW maps: convs of every kernel shape, stride, pad, dilation and group with
// epilogue chains, residual blocks, two-branch joins (asymmetric kernels, channel and spatial
// broadcasts), squeeze-and-excitation gates, pooling and sibling 1x1 convs.
#include <algorithm>

#include "tests/fuzz_planner/graph_gen.h"

namespace fusert::fuzz {
namespace {

int64_t out_dim(int64_t in, int64_t k, int64_t s, int64_t d, int64_t p0, int64_t p1) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

// "Same" padding for stride 1: the output keeps the input's size.
void same_pads(ConvSpec& c) {
  c.pt = c.dh * (c.kh - 1) / 2;
  c.pb = c.dh * (c.kh - 1) - c.pt;
  c.pl = c.dw * (c.kw - 1) / 2;
  c.pr = c.dw * (c.kw - 1) - c.pl;
}

// Grows pads until the window fits at least once (an input of 1x1 with a 5x5 kernel).
void fit(const Dims& x, ConvSpec& c) {
  while (x[2] + c.pt + c.pb < c.dh * (c.kh - 1) + 1) (c.pt <= c.pb ? c.pt : c.pb)++;
  while (x[3] + c.pl + c.pr < c.dw * (c.kw - 1) + 1) (c.pl <= c.pr ? c.pl : c.pr)++;
}

const std::vector<std::pair<int64_t, int64_t>> kKernels = {{1, 1}, {3, 3}, {1, 3}, {3, 1}, {5, 5},
                                                           {2, 2}, {1, 5}, {5, 1}, {3, 3}, {1, 1}};

std::string emit_conv(Emitter& e, const std::string& x, const ConvSpec& c) {
  const Dims& xs = e.shape(x);
  std::vector<std::string> in = {x, e.weight({c.m, xs[1] / c.group, c.kh, c.kw})};
  if (c.bias) in.push_back(e.weight({c.m}, "uniform"));
  return e.node("Conv", in, conv_out(xs, c), conv_attrs(c));
}

std::string emit_bn(Emitter& e, const std::string& x) {
  const int64_t c = e.shape(x)[1];
  return e.node(
      "BatchNormalization",
      {x, e.weight({c}, "bn_scale"), e.weight({c}, "uniform"), e.weight({c}, "uniform"), e.weight({c}, "bn_var")},
      e.shape(x), "epsilon: 0.001");
}

std::string act(Emitter& e, Rng& r, const std::string& x) {
  static const std::vector<std::string> acts = {"Relu", "HardSwish", "Sigmoid", "Clip", "Tanh", "x*HardSigmoid"};
  const std::string& a = r.pick(acts);
  if (a == "Clip") return e.node(a, {x}, e.shape(x), "min: 0.0, max: 6.0");
  if (a == "x*HardSigmoid") {  // hard-swish as torchvision's MobileNetV3 exports it (1/6), or not (0.2)
    const std::string h = e.node("HardSigmoid", {x}, e.shape(x),
                                 r.chance(0.8) ? "alpha: 0.16666667, beta: 0.5" : "alpha: 0.2, beta: 0.5");
    return r.chance(0.5) ? e.node("Mul", {x, h}, e.shape(x)) : e.node("Mul", {h, x}, e.shape(x));
  }
  return e.node(a, {x}, e.shape(x));
}

std::string computed(Emitter& e, const std::string& x) { return e.computed(x) ? x : e.node("Relu", {x}, e.shape(x)); }

const std::vector<std::string> kJoins = {"Add", "Add", "Add", "Mul", "Sub"};

std::string join(Emitter& e, Rng& r, const std::string& a, const std::string& b, const std::string& op) {
  const Dims& sa = e.shape(a);
  const Dims& sb = e.shape(b);
  Dims out(sa.size());
  for (size_t i = 0; i < sa.size(); ++i) out[i] = std::max(sa[i], sb[i]);
  return r.chance(0.5) ? e.node(op, {a, b}, out) : e.node(op, {b, a}, out);
}

// InstanceNormalization (an opaque step between the conv and its epilogue); epsilon 0.05 bounds
// how much it amplifies the rounding differences of the conv paths (1 / sqrt(var + eps)).
std::string emit_instance_norm(Emitter& e, const std::string& x) {
  const int64_t c = e.shape(x)[1];
  return e.node("InstanceNormalization", {x, e.weight({c}, "bn_scale"), e.weight({c}, "uniform")}, e.shape(x),
                "epsilon: 0.05");
}

// conv (+ BN or InstanceNorm) + epilogue chain, the vertical bread and butter.
std::string conv_chain(Emitter& e, Rng& r, const std::string& x) {
  std::string y = emit_conv(e, x, random_conv(r, e.shape(x)));
  const Dims& ys = e.shape(y);
  if (r.chance(0.3)) y = ys[2] * ys[3] >= 4 && r.chance(0.6) ? emit_instance_norm(e, y) : emit_bn(e, y);
  if (r.chance(0.8)) y = epilogue_chain(e, r, y, 4);
  if (r.chance(0.15)) y = e.node("GlobalAveragePool", {y}, {e.shape(y)[0], e.shape(y)[1], 1, 1});
  return y;
}

// x -> conv -> act -> conv (-> act) joined with x or a 1x1 conv shortcut, then maybe an act.
std::string residual(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  ConvSpec c1;
  c1.m = r.chance(0.7) ? xs[1] : r.range(1, 8);
  auto k = r.pick(kKernels);
  c1.kh = k.first, c1.kw = k.second;
  if (r.chance(0.3)) c1.sh = c1.sw = 2;
  same_pads(c1);
  c1.bias = r.chance(0.7);
  std::string y = act(e, r, emit_conv(e, x, c1));
  ConvSpec c2 = c1;
  c2.sh = c2.sw = 1;
  c2.m = c1.m;
  k = r.pick(kKernels);
  c2.kh = k.first, c2.kw = k.second;
  same_pads(c2);
  y = emit_conv(e, y, c2);
  if (r.chance(0.3)) y = act(e, r, y);
  std::string sc = x;
  if (e.shape(y) != xs || r.chance(0.2)) {
    ConvSpec s;
    s.m = c1.m, s.sh = s.sw = c1.sh, s.bias = r.chance(0.5);
    sc = emit_conv(e, x, s);
    if (r.chance(0.3)) sc = emit_bn(e, sc);
  }
  if (e.shape(sc) != e.shape(y)) return y;  // odd sizes with stride 2: shapes need not agree
  y = join(e, r, y, sc, r.pick(kJoins));
  return r.chance(0.6) ? act(e, r, y) : y;
}

// Two conv branches on one input joined by Add/Mul/Sub; the second may have one output channel
// (a channel broadcast) or run on the pooled input ([N,C,1,1]: a spatial broadcast).
std::string two_branch(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  ConvSpec a, b;
  a.m = b.m = r.pick(std::vector<int64_t>{1, 2, 4, 8, xs[1]});
  auto ka = r.pick(kKernels), kb = r.pick(kKernels);
  a.kh = ka.first, a.kw = ka.second, b.kh = kb.first, b.kw = kb.second;
  if (r.chance(0.2)) a.dh = a.dw = 2;
  if (r.chance(0.2)) b.dh = b.dw = 2;
  same_pads(a);
  same_pads(b);
  if (r.chance(0.2)) a.sh = a.sw = b.sh = b.sw = 2;
  a.bias = r.chance(0.7), b.bias = r.chance(0.7);
  int64_t shape_kind = r.below(6);
  if (shape_kind == 0) b.m = 1;  // channel broadcast
  std::string bx = x;
  if (shape_kind == 1) {  // spatial broadcast
    bx = e.node("GlobalAveragePool", {x}, {xs[0], xs[1], 1, 1});
    b.kh = b.kw = 1, b.pt = b.pl = b.pb = b.pr = 0, b.sh = b.sw = 1, b.dh = b.dw = 1;
  }
  std::string ya = emit_conv(e, x, a), yb = emit_conv(e, bx, b);
  if (r.chance(0.5)) ya = act(e, r, ya);
  if (r.chance(0.4)) yb = act(e, r, yb);
  if (e.shape(ya)[2] != e.shape(yb)[2] && e.shape(yb)[2] != 1) return ya;
  if (e.shape(ya)[3] != e.shape(yb)[3] && e.shape(yb)[3] != 1) return ya;
  std::string y = join(e, r, ya, yb, r.pick(kJoins));
  if (r.chance(0.5)) y = epilogue_chain(e, r, y, 2);
  if (r.chance(0.1)) y = e.node("GlobalAveragePool", {y}, {e.shape(y)[0], e.shape(y)[1], 1, 1});
  return y;
}

// Squeeze-and-excitation: x * gate(GAP(x)) (maybe joined with x again), then maybe the block's
// projection conv.
std::string se_gate(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  std::string g = e.node("GlobalAveragePool", {x}, {xs[0], xs[1], 1, 1});
  ConvSpec c1, c2;
  c1.m = r.range(1, 4);
  c2.m = xs[1];
  g = e.node("Relu", {emit_conv(e, g, c1)}, {xs[0], c1.m, 1, 1});
  g = emit_conv(e, g, c2);
  g = r.chance(0.6) ? e.node("HardSigmoid", {g}, e.shape(g), "alpha: 0.1666667, beta: 0.5")
                    : e.node("Sigmoid", {g}, e.shape(g));
  std::string y = r.chance(0.5) ? e.node("Mul", {x, g}, xs) : e.node("Mul", {g, x}, xs);
  if (r.chance(0.35)) {  // the gated residual of PaddleOCR's FPN: x + x * gate (maybe activated)
    y = r.chance(0.5) ? e.node("Add", {x, y}, xs) : e.node(r.chance(0.5) ? "Add" : "Sub", {y, x}, xs);
    if (r.chance(0.3)) y = act(e, r, y);
  }
  if (r.chance(0.6)) {
    ConvSpec p;
    p.m = r.range(1, 8);
    p.bias = r.chance(0.5);
    y = emit_conv(e, y, p);
    if (r.chance(0.3)) y = emit_bn(e, y);
  }
  return y;
}

std::string pool(Emitter& e, Rng& r, const std::string& x) {
  const Dims xs = e.shape(x);
  if (r.chance(0.35)) {  // a reduction over the last two axes (a global pool), the last one, or the channels
    const int64_t which = r.below(3);
    Dims out = xs;
    if (which == 0) out[2] = out[3] = 1;
    out[which == 2 ? 1 : 3] = 1;
    const char* axes = which == 0 ? "[-2, -1]" : which == 1 ? "[3]" : "[1]";
    static const std::vector<std::string> kReduce = {"ReduceMax", "ReduceL1", "ReduceL2", "ReduceSumSquare",
                                                     "ReduceLogSumExp"};
    const std::string op = r.chance(0.5) ? "ReduceMean" : r.pick(kReduce);
    return e.node(op, {x}, out, std::string("axes: ") + axes + ", keepdims: 1");
  }
  if (r.chance(0.3)) return e.node("GlobalAveragePool", {x}, {xs[0], xs[1], 1, 1});
  int64_t k = std::min<int64_t>(r.range(1, 3), std::min(xs[2], xs[3])), s = r.range(1, 2), p = r.below(k);
  Dims out = {xs[0], xs[1], (xs[2] + 2 * p - k) / s + 1, (xs[3] + 2 * p - k) / s + 1};
  std::string attrs =
      "kernel_shape: " + shape_str({k, k}) + ", strides: " + shape_str({s, s}) + ", pads: " + shape_str({p, p, p, p});
  if (r.chance(0.5)) return e.node("MaxPool", {x}, out, attrs);
  return e.node("AveragePool", {x}, out, attrs + ", count_include_pad: " + std::to_string(r.below(2)));
}

// Sibling 1x1 convs on one input, each with its own chain; concatenated, summed (Adds, or one Sum
// or Mean node) or kept apart.
std::string siblings(Emitter& e, Rng& r, const std::string& x) {
  const int64_t n = r.range(2, 5);
  const bool same_m = r.chance(0.6);
  const int64_t m0 = r.range(1, 8);
  std::vector<std::string> ys;
  for (int64_t i = 0; i < n; ++i) {
    ConvSpec c;
    c.m = same_m ? m0 : r.range(1, 8);
    c.bias = r.chance(0.7);
    std::string y = emit_conv(e, x, c);
    if (r.chance(0.6)) y = epilogue_chain(e, r, y, 2);
    ys.push_back(y);
  }
  int64_t how = r.below(3);
  if (how == 0) {
    Dims out = e.shape(ys[0]);
    out[1] = 0;
    for (const std::string& y : ys) out[1] += e.shape(y)[1];
    return e.node("Concat", ys, out, "axis: 1");
  }
  if (how == 1 && same_m) {
    if (r.chance(0.5)) return e.node(r.chance(0.5) ? "Sum" : "Mean", ys, e.shape(ys[0]));  // one opaque join
    std::string y = ys[0];
    for (size_t i = 1; i < ys.size(); ++i) y = e.node("Add", {y, ys[i]}, e.shape(y));
    return y;
  }
  return ys[static_cast<size_t>(r.below(static_cast<int64_t>(ys.size())))];
}

// A computed [N,1,H,W] or [N,C,1,1] tensor joined with a conv output of [N,C,H,W].
std::string broadcast_join(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  ConvSpec c;
  c.m = r.range(1, 8);
  c.kh = c.kw = r.chance(0.5) ? 3 : 1;
  same_pads(c);
  std::string y = emit_conv(e, x, c);
  if (r.chance(0.5)) y = act(e, r, y);
  std::string other;
  if (r.chance(0.5)) {
    ConvSpec one;
    one.m = 1;
    other = emit_conv(e, x, one);
  } else {
    ConvSpec gc;
    gc.m = c.m;
    other = emit_conv(e, e.node("GlobalAveragePool", {x}, {xs[0], xs[1], 1, 1}), gc);
  }
  if (r.chance(0.5)) other = act(e, r, other);
  y = join(e, r, y, other, r.pick(kJoins));
  return r.chance(0.5) ? act(e, r, y) : y;
}

// MobileNetV2 / EfficientNet inverted residual: 1x1 expansion (+ BN) + act, depthwise KxK
// (stride 1 or 2, the pads oneDNN's depthwise post-op computes or others) (+ BN) + act, 1x1
// projection, joined with the input when the shapes allow; sometimes the expansion has a
// second reader or a chain with an operand (block fusion must then refuse).
std::string inverted_residual(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  ConvSpec expand;
  expand.m = xs[1] * r.pick(std::vector<int64_t>{1, 2, 3, 6});
  expand.bias = r.chance(0.7);
  std::string y = emit_conv(e, x, expand);
  if (r.chance(0.3)) y = emit_bn(e, y);
  if (r.chance(0.85)) y = act(e, r, y);
  if (r.chance(0.1)) y = epilogue_chain(e, r, y, 2);
  const std::string mid = y;
  ConvSpec dw;
  dw.m = dw.group = expand.m;
  dw.kh = dw.kw = r.chance(0.7) ? 3 : 5;
  if (r.chance(0.4)) dw.sh = dw.sw = 2;
  same_pads(dw);
  if (r.chance(0.1)) dw.pt = dw.pl = 0;  // TF "SAME" style for stride 2: the extra pad at the end
  dw.bias = r.chance(0.7);
  fit(e.shape(y), dw);
  y = emit_conv(e, y, dw);
  if (r.chance(0.3)) y = emit_bn(e, y);
  if (r.chance(0.85)) y = act(e, r, y);
  ConvSpec project;
  const bool second_reader = r.chance(0.1);  // the expanded map read again (channel broadcast join)
  project.m = second_reader ? expand.m : r.chance(0.6) ? xs[1] : r.range(1, 8);
  project.bias = r.chance(0.7);
  y = emit_conv(e, y, project);
  if (second_reader) y = join(e, r, y, e.node("GlobalAveragePool", {mid}, {xs[0], expand.m, 1, 1}), "Add");
  if (e.shape(y) == xs && r.chance(0.7)) y = join(e, r, y, x, "Add");
  return y;
}

// DenseNet's pre-activation layer: BN and an activation on the running (often concatenated) map,
// a 1x1 and a 3x3 conv, the result concatenated with the input. The BN and the activation run
// between convolutions in their layout (runtime/cpu/layout_follow.h).
std::string dense_layer(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  std::string y = act(e, r, emit_bn(e, x));
  ConvSpec a;
  a.m = r.pick(std::vector<int64_t>{4, 8, 16});
  a.bias = r.chance(0.3);
  y = emit_conv(e, y, a);
  if (r.chance(0.7)) y = act(e, r, emit_bn(e, y));
  ConvSpec b;
  b.m = r.pick(std::vector<int64_t>{3, 8});
  b.kh = b.kw = 3;
  same_pads(b);
  b.bias = r.chance(0.3);
  y = emit_conv(e, y, b);
  Dims out = e.shape(x);
  out[1] += e.shape(y)[1];
  return r.chance(0.8) ? e.node("Concat", {x, y}, out, "axis: 1") : y;
}

// ConvNeXt's block: a depthwise conv, Transpose to NHWC, LayerNorm over channels, the MLP as
// MatMuls by weights, Transpose back, a per-channel layer scale and the residual Add. The
// Transposes read and write the convolutions' layout (runtime/cpu/layout_follow.h).
std::string convnext_block(Emitter& e, Rng& r, std::string x) {
  x = computed(e, x);
  const Dims xs = e.shape(x);
  const int64_t c = xs[1], hidden = c * r.pick(std::vector<int64_t>{1, 2, 4});
  ConvSpec dw;
  dw.m = dw.group = c;
  dw.kh = dw.kw = std::min<int64_t>({r.chance(0.5) ? 7 : 3, 2 * xs[2] + 1, 2 * xs[3] + 1});
  same_pads(dw);
  dw.bias = r.chance(0.7);
  fit(xs, dw);
  std::string y = emit_conv(e, x, dw);
  const Dims ys = e.shape(y);
  const Dims nhwc = {ys[0], ys[2], ys[3], ys[1]};
  y = e.node("Transpose", {y}, nhwc, "perm: [0, 2, 3, 1]");
  if (r.chance(0.7)) {
    y = e.node("LayerNormalization", {y, e.weight({c}, "bn_scale"), e.weight({c}, "uniform")}, nhwc,
               "axis: -1, epsilon: 0.00001");
  }
  y = e.node("MatMul", {y, e.weight({c, hidden})}, {nhwc[0], nhwc[1], nhwc[2], hidden});
  y = act(e, r, y);
  y = e.node("MatMul", {y, e.weight({hidden, c})}, nhwc);
  y = e.node("Transpose", {y}, ys, "perm: [0, 3, 1, 2]");
  if (r.chance(0.7)) y = e.node("Mul", {y, e.weight({c, 1, 1}, "uniform")}, ys);
  return e.shape(y) == xs && r.chance(0.8) ? join(e, r, y, x, "Add") : y;
}

}  // namespace

Dims conv_out(const Dims& x, const ConvSpec& c) {
  return {x[0], c.m, out_dim(x[2], c.kh, c.sh, c.dh, c.pt, c.pb), out_dim(x[3], c.kw, c.sw, c.dw, c.pl, c.pr)};
}

std::string conv_attrs(const ConvSpec& c) {
  std::string attrs = "kernel_shape: " + shape_str({c.kh, c.kw}) + ", strides: " + shape_str({c.sh, c.sw}) +
                      ", pads: " + shape_str({c.pt, c.pl, c.pb, c.pr}) + ", dilations: " + shape_str({c.dh, c.dw});
  if (c.group != 1) attrs += ", group: " + std::to_string(c.group);
  return attrs;
}

ConvSpec random_conv(Rng& r, const Dims& x) {
  ConvSpec c;
  const int64_t cin = x[1];
  c.m = r.pick(std::vector<int64_t>{1, 2, 3, 4, 6, 8, cin});
  int64_t g = r.below(10);
  if (g < 2) {
    c.group = cin;  // depthwise (multiplier 1 or 2)
    c.m = cin * (r.chance(0.8) ? 1 : 2);
  } else if (g < 3) {
    std::vector<int64_t> divs;
    for (int64_t d = 2; d <= cin; ++d)
      if (cin % d == 0) divs.push_back(d);
    if (!divs.empty()) {
      c.group = r.pick(divs);
      c.m = c.group * r.range(1, 2);
    }
  }
  auto k = r.pick(kKernels);
  c.kh = k.first;
  c.kw = k.second;
  if (r.chance(0.25)) c.sh = c.sw = 2;
  if (r.chance(0.1)) c.sh = 2, c.sw = 1;
  if (r.chance(0.15)) c.dh = c.dw = 2;
  int64_t p = r.below(5);
  if (p < 3) {
    same_pads(c);
  } else if (p == 4) {
    c.pt = r.below(c.kh), c.pb = r.below(c.kh), c.pl = r.below(c.kw), c.pr = r.below(c.kw);
  }
  c.bias = r.chance(0.7);
  fit(x, c);
  return c;
}

void cnn_motif(Emitter& e, Rng& r, std::string& cur, std::string* name) {
  int64_t k = r.below(128);
  if (k >= 120) {
    *name = "convnext_block", cur = convnext_block(e, r, cur);
    return;
  }
  if (k >= 112) {
    *name = "dense_layer", cur = dense_layer(e, r, cur);
    return;
  }
  if (k >= 100) {
    cur = resample_motif(e, r, computed(e, cur), name);
    return;
  }
  if (k < 18)
    *name = "conv_chain", cur = conv_chain(e, r, cur);
  else if (k < 28)
    *name = "inverted_residual", cur = inverted_residual(e, r, cur);
  else if (k < 40)
    *name = "residual", cur = residual(e, r, cur);
  else if (k < 55)
    *name = "two_branch", cur = two_branch(e, r, cur);
  else if (k < 65)
    *name = "se_gate", cur = se_gate(e, r, cur);
  else if (k < 72)
    *name = "pool", cur = pool(e, r, cur);
  else if (k < 84)
    *name = "siblings", cur = siblings(e, r, cur);
  else if (k < 93)
    *name = "broadcast_join", cur = broadcast_join(e, r, cur);
  else
    *name = "elementwise", cur = epilogue_chain(e, r, computed(e, cur), 4);
}

}  // namespace fusert::fuzz
