// Resampling and data-movement motifs of the CNN family, the ops that real exports bring around
// the fused blocks (tests/fuzz_planner/graph_gen.h, resample_motif):
// - An FPN join: a stride-2 conv, Resize back up (nearest, linear or cubic, every coordinate mode, by
//   scales or by sizes), maybe through a 3x3 conv, added to a lateral 1x1 conv.
// - A ConvTranspose head: kernel 2 or 3, stride 2, groups, bias, output padding; then a bias Add,
//   BatchNorm and an epilogue. Beside it at times DBNet's probability head, 2x2 stride-2
//   ConvTransposes that grow the map 4-8x to a Sigmoid of its own.
// - Pad (constant, reflect, edge) before a valid conv.
// - An Expand or Tile of a per-channel weight joining the running value.
// - A pixel shuffle: DepthToSpace (DCR, CRD) up and SpaceToDepth back, epilogues between.
// - A 1-D conv in the form the ONNX import gives it (Reshape to [N, C, 1, L], a 1 x k Conv,
//   Reshape back).
// - A detector's tail: NonZero or NonMaxSuppression (data-dependent output sizes: execution stages).
// - A volumetric block: the map as [N, C/2, 2, H, W], a 3-D conv, epilogues, a 3-D max or average
//   pool, back to [N, C, H, W].
#include <algorithm>
#include <string>
#include <vector>

#include "tests/fuzz_planner/graph_gen.h"

namespace fusert::fuzz {
namespace {

std::string conv(Emitter& e, const std::string& x, int64_t m, int64_t k, int64_t s, int64_t pad) {
  const Dims& xs = e.shape(x);
  const Dims out = {xs[0], m, (xs[2] + 2 * pad - k) / s + 1, (xs[3] + 2 * pad - k) / s + 1};
  return e.node("Conv", {x, e.weight({m, xs[1], k, k}), e.weight({m}, "uniform")}, out,
                "kernel_shape: " + shape_str({k, k}) + ", strides: " + shape_str({s, s}) +
                    ", pads: " + shape_str({pad, pad, pad, pad}));
}

std::string add(Emitter& e, Rng& r, const std::string& a, const std::string& b) {
  return r.chance(0.5) ? e.node("Add", {a, b}, e.shape(a)) : e.node("Add", {b, a}, e.shape(a));
}

// A stride-2 conv (3x3, pads 1: ceil(H / 2)) that the motifs upsample again.
std::string down(Emitter& e, Rng& r, const std::string& x, int64_t m) {
  std::string d = conv(e, x, m, 3, 2, 1);
  return r.chance(0.6) ? e.node("Relu", {d}, e.shape(d)) : d;
}

std::string fpn_resize(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int64_t m = r.pick(std::vector<int64_t>{1, 3, 4, 8});
  const std::string d = down(e, r, x, m);
  const Dims& ds = e.shape(d);
  static const std::vector<std::string> modes = {"nearest", "linear", "cubic"};
  const std::string mode = r.pick(modes);
  static const std::vector<std::string> coords = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"};
  static const std::vector<std::string> nearest = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  std::string attrs = "mode: " + mode + ", coordinate_transformation_mode: " + r.pick(coords);
  if (mode == "nearest") attrs += ", nearest_mode: " + r.pick(nearest);
  if (mode == "cubic")  // PyTorch's bicubic (-0.75) or TensorFlow's (-0.5), edge taps kept or dropped
    attrs += std::string(", cubic_coeff_a: ") + (r.chance(0.5) ? "-0.75" : "-0.5") +
             ", exclude_outside: " + (r.chance(0.5) ? "1" : "0");
  const Dims out = {xs[0], m, xs[2], xs[3]};
  std::string up;
  if (ds[2] * 2 == xs[2] && ds[3] * 2 == xs[3] && r.chance(0.6)) {  // by scales, as exporters write it
    up = e.node("Resize", {d, "", e.const_f32s({1.f, 1.f, 2.f, 2.f})}, out, attrs);
  } else {
    up = e.node("Resize", {d, "", "", e.const_i64(out)}, out, attrs);
  }
  if (r.chance(0.4)) up = conv(e, up, m, 3, 1, 1);  // the upsampled map read by a conv
  const std::string lateral = conv(e, x, m, 1, 1, 0);
  std::string y = add(e, r, up, lateral);
  return r.chance(0.5) ? epilogue_chain(e, r, y, 2) : y;
}

// Two or three 2x2 stride-2 ConvTransposes from x (BatchNorm and an epilogue between them), a
// Sigmoid, a graph output: the maps grow past 8 and 24 columns, the direct kernel's vector runs.
void upsample_side(Emitter& e, Rng& r, const std::string& x) {
  std::string y = x;
  const int64_t steps = r.range(2, 3);
  for (int64_t i = 0; i < steps; ++i) {
    const Dims ys = e.shape(y);
    const int64_t m = i + 1 == steps ? r.range(1, 2) : r.pick(std::vector<int64_t>{1, 3, 13});
    const int64_t group = ys[1] % 2 == 0 && m % 2 == 0 && r.chance(0.2) ? 2 : 1;
    std::vector<std::string> in = {y, e.weight({ys[1], m / group, 2, 2})};
    if (r.chance(0.6)) in.push_back(e.weight({m}, "uniform"));
    std::string attrs = "kernel_shape: [2, 2], strides: [2, 2]";
    if (group > 1) attrs += ", group: 2";
    y = e.node("ConvTranspose", in, {ys[0], m, 2 * ys[2], 2 * ys[3]}, attrs);
    if (i + 1 == steps) break;
    if (r.chance(0.5)) {
      y = e.node(
          "BatchNormalization",
          {y, e.weight({m}, "bn_scale"), e.weight({m}, "uniform"), e.weight({m}, "uniform"), e.weight({m}, "bn_var")},
          e.shape(y), "epsilon: 0.001");
    }
    y = r.chance(0.6) ? e.node("Relu", {y}, e.shape(y)) : epilogue_chain(e, r, y, 2);
  }
  e.mark_output(e.node("Sigmoid", {y}, e.shape(y)));
}

std::string deconv_head(Emitter& e, Rng& r, const std::string& x) {
  if (r.chance(0.35)) upsample_side(e, r, x);
  const Dims& xs = e.shape(x);
  const int64_t c = r.pick(std::vector<int64_t>{2, 4, 6});
  const std::string d = down(e, r, x, c);
  const Dims& ds = e.shape(d);
  const int64_t group = r.chance(0.25) ? 2 : 1, m = group * r.range(1, 3), k = r.range(2, 3);
  // Output H from h = ceil(H / 2): k 2 makes 2h - pads; k 3 with pads 1 makes 2h - 1 + output_padding.
  std::string attrs = "kernel_shape: " + shape_str({k, k}) + ", strides: [2, 2]";
  if (group > 1) attrs += ", group: " + std::to_string(group);
  if (k == 2) {
    attrs += ", pads: " + shape_str({0, 0, 2 * ds[2] - xs[2], 2 * ds[3] - xs[3]});
  } else {
    attrs += ", pads: [1, 1, 1, 1], output_padding: " + shape_str({xs[2] - 2 * ds[2] + 1, xs[3] - 2 * ds[3] + 1});
  }
  std::vector<std::string> in = {d, e.weight({c, m / group, k, k})};
  if (r.chance(0.6)) in.push_back(e.weight({m}, "uniform"));
  std::string y = e.node("ConvTranspose", in, {xs[0], m, xs[2], xs[3]}, attrs);
  if (r.chance(0.3)) y = e.node("Add", {y, e.weight({1, m, 1, 1}, "uniform")}, e.shape(y));  // Paddle's bias
  if (r.chance(0.5)) {
    y = e.node(
        "BatchNormalization",
        {y, e.weight({m}, "bn_scale"), e.weight({m}, "uniform"), e.weight({m}, "uniform"), e.weight({m}, "bn_var")},
        e.shape(y), "epsilon: 0.001");
  }
  if (r.chance(0.5)) y = epilogue_chain(e, r, y, 2);
  return r.chance(0.5) ? add(e, r, y, conv(e, x, m, 1, 1, 0)) : y;
}

std::string pad_conv(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int mode = static_cast<int>(r.below(3));
  static const char* kModes[] = {"constant", "reflect", "edge"};
  std::vector<int64_t> pads(8, 0);
  for (int d : {2, 3}) {
    // reflect pads stay below the dim (the shape function's rule)
    const int64_t most = mode == 1 ? std::min<int64_t>(2, xs[static_cast<size_t>(d)] - 1) : 2;
    pads[static_cast<size_t>(d)] = r.range(0, most), pads[static_cast<size_t>(d) + 4] = r.range(0, most);
  }
  const Dims ps = {xs[0], xs[1], xs[2] + pads[2] + pads[6], xs[3] + pads[3] + pads[7]};
  std::string attrs = "pads: " + shape_str(pads) + ", mode: " + kModes[mode];
  if (mode == 0 && r.chance(0.5)) attrs += ", value: -0.5";
  const std::string p = e.node("Pad", {x}, ps, attrs);
  const int64_t k = std::min<int64_t>({3, ps[2], ps[3]});
  std::string y = conv(e, p, r.pick(std::vector<int64_t>{1, 4, xs[1]}), k, 1, 0);
  return r.chance(0.6) ? epilogue_chain(e, r, y, 3) : y;
}

std::string broadcast_gate(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  std::string g;
  if (r.chance(0.5)) {
    g = e.node("Expand", {e.weight({1, xs[1], 1, 1}, "uniform"), e.const_i64(xs)}, xs);
  } else {
    g = e.node("Tile", {e.weight({1, xs[1], 1, 1}, "uniform"), e.const_i64({xs[0], 1, xs[2], xs[3]})}, xs);
  }
  if (r.chance(0.5)) g = e.node("Sigmoid", {g}, xs);
  return r.chance(0.5) ? e.node("Mul", {x, g}, xs) : e.node("Add", {g, x}, xs);
}

// A ShuffleNet-style channel split (C >= 2): Split into c1 and C - c1 channels, one part through a 1x1
// conv (and an epilogue), the other's channels reversed by a Slice of step -1 (an end beyond the
// dim), Concat back to C channels and a join. The CUDA backend runs Split and Slice as strided copies.
std::string channel_split(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int64_t c1 = r.range(1, xs[1] - 1), c2 = xs[1] - c1;
  const Dims sa = {xs[0], c1, xs[2], xs[3]}, sb = {xs[0], c2, xs[2], xs[3]};
  const std::vector<std::string> parts = e.nodes("Split", {x, e.const_i64({c1, c2})}, {sa, sb}, "axis: 1");
  std::string a = parts[0];
  a = conv(e, a, c1, 1, 1, 0);
  if (r.chance(0.5)) a = epilogue_chain(e, r, a, 2);
  const std::string b = e.node(
      "Slice", {parts[1], e.const_i64({-1}), e.const_i64({-(c2 + 10)}), e.const_i64({1}), e.const_i64({-1})}, sb);
  const std::string y = e.node("Concat", {a, b}, xs, "axis: 1");
  return r.chance(0.7) ? add(e, r, y, x) : y;
}

// A pixel shuffle and back: conv to 4m channels, DepthToSpace (DCR or CRD, blocksize 2) to
// [N, m, 2H, 2W], an epilogue there, SpaceToDepth back to [N, 4m, H, W], a 1x1 conv to C and a join.
std::string pixel_shuffle(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int64_t m = r.range(1, 3);
  std::string y = conv(e, x, 4 * m, 3, 1, 1);
  if (r.chance(0.5)) y = epilogue_chain(e, r, y, 2);
  const std::string mode = r.chance(0.5) ? "DCR" : "CRD";
  y = e.node("DepthToSpace", {y}, {xs[0], m, 2 * xs[2], 2 * xs[3]}, "blocksize: 2, mode: " + mode);
  if (r.chance(0.6)) y = epilogue_chain(e, r, y, 2);
  y = e.node("SpaceToDepth", {y}, {xs[0], 4 * m, xs[2], xs[3]}, "blocksize: 2");
  y = conv(e, y, xs[1], 1, 1, 0);
  return r.chance(0.7) ? add(e, r, y, x) : y;
}

// A 1-D conv as ONNX imports one ([N, C, L] -> Reshape [0, 0, 1, -1] -> Conv 1 x k -> Reshape
// [0, 0, -1]), on the running map flattened to L = H * W: pads, stride 1 or 2, dilation, an
// epilogue after the conv or after the Reshape back; joined to x when the length is kept.
std::string conv1d(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int64_t len = xs[2] * xs[3], k = r.pick(std::vector<int64_t>{1, 3, 5}), d = r.chance(0.3) ? 2 : 1;
  const int64_t s = r.chance(0.3) ? 2 : 1, p = d * (k - 1) / 2, m = r.chance(0.5) ? xs[1] : r.range(1, 6);
  const int64_t out = (len + 2 * p - d * (k - 1) - 1) / s + 1;
  const std::string x3 = e.node("Reshape", {x, e.const_i64({0, 0, -1})}, {xs[0], xs[1], len});
  const std::string x4 = e.node("Reshape", {x3, e.const_i64({0, 0, 1, -1})}, {xs[0], xs[1], 1, len});
  std::string attrs = "kernel_shape: [1, " + std::to_string(k) + "], pads: [0, " + std::to_string(p) + ", 0, " +
                      std::to_string(p) + "], strides: [1, " + std::to_string(s) + "], dilations: [1, " +
                      std::to_string(d) + "]";
  std::vector<std::string> in = {x4, e.weight({m, xs[1], 1, k})};
  if (r.chance(0.6)) in.push_back(e.weight({m}, "uniform"));
  std::string y = e.node("Conv", in, {xs[0], m, 1, out}, attrs);
  if (r.chance(0.5)) y = epilogue_chain(e, r, y, 2);
  y = e.node("Reshape", {y, e.const_i64({0, 0, -1})}, {xs[0], m, out});
  if (r.chance(0.4)) y = epilogue_chain(e, r, y, 2);
  if (out != len || m != xs[1]) return e.node("Reshape", {y, e.const_i64({0, 0, 1, -1})}, {xs[0], m, 1, out});
  y = e.node("Reshape", {y, e.const_i64(xs)}, xs);
  return r.chance(0.7) ? add(e, r, y, x) : y;
}

// A detector's tail, off the main chain: an output whose size depends on the data, so the plan
// splits into execution stages (runtime/staged.h) and what follows is planned at each run's
// count. NonZero of a threshold mask gathered back from the map, or NonMaxSuppression over boxes
// and class scores from two 1x1 convs; then scalar epilogues on the kept values. The count may be
// 0 (an empty output). The shapes after the op are recorded at the import's count, 16; nothing
// but scalar constants joins them.
void detect_tail(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  const int64_t n = 16;
  std::string kept;
  if (r.chance(0.5)) {
    const std::string mask = e.node("Greater", {x, e.const_f32(static_cast<float>(r.range(0, 8)) / 8.f)}, xs);
    const std::string nz = e.node("NonZero", {mask}, {static_cast<int64_t>(xs.size()), n});
    const std::string idx = e.node("Transpose", {nz}, {n, static_cast<int64_t>(xs.size())}, "perm: [1, 0]");
    kept = e.node("GatherND", {x, idx}, {n});
  } else {
    const int64_t hw = xs[2] * xs[3], classes = r.range(1, 3);
    const std::string b = conv(e, x, 4, 1, 1, 0);
    const std::string bf = e.node("Reshape", {b, e.const_i64({0, 4, -1})}, {xs[0], 4, hw});
    const std::string boxes = e.node("Transpose", {bf}, {xs[0], hw, 4}, "perm: [0, 2, 1]");
    const std::string s = e.node("Sigmoid", {conv(e, x, classes, 1, 1, 0)}, {xs[0], classes, xs[2], xs[3]});
    const std::string scores = e.node("Reshape", {s, e.const_i64({0, classes, -1})}, {xs[0], classes, hw});
    const std::string sel =
        e.node("NonMaxSuppression",
               {boxes, scores, e.const_i64({r.range(0, 6)}), e.const_f32s({static_cast<float>(r.range(1, 9)) / 10.f}),
                e.const_f32s({static_cast<float>(r.range(0, 9)) / 10.f})},
               {n, 3}, r.chance(0.5) ? "center_point_box: 1" : "");
    kept = e.node("GatherND", {scores, sel}, {n});
  }
  std::string y = e.node("Mul", {kept, e.const_f32(static_cast<float>(r.range(1, 4)))}, {n});
  y = e.node(r.pick(std::vector<std::string>{"Sigmoid", "Tanh", "Relu", "Abs"}), {y}, {n});
  if (r.chance(0.5)) y = e.node("Add", {y, e.const_f32(1.f)}, {n});
  e.mark_output(y);
}

// A volumetric block as video models have them: the running map (C even) read as [N, C/2, 2, H, W],
// a 3-D conv to as many channels (kernel depth 1 or 3 with pads 1 in depth, 3x3 or 1x1 in space,
// groups), an epilogue, maybe a 3-D pool that keeps the size, back to [N, C, H, W] and a join.
std::string volume3d(Emitter& e, Rng& r, const std::string& x) {
  const Dims& xs = e.shape(x);
  if (xs[1] % 2 != 0) return x;
  const int64_t c = xs[1] / 2, kd = r.chance(0.5) ? 3 : 1, k = r.chance(0.6) ? 3 : 1, g = r.chance(0.3) ? c : 1;
  const Dims v = {xs[0], c, 2, xs[2], xs[3]};
  std::string y = e.node("Reshape", {x, e.const_i64(v)}, v);
  std::vector<std::string> in = {y, e.weight({c, c / g, kd, k, k})};
  if (r.chance(0.6)) in.push_back(e.weight({c}, "uniform"));
  const int64_t pd = kd / 2, ps = k / 2;
  y = e.node("Conv3D", in, v,
             "kernel_shape: " + shape_str({kd, k, k}) + ", pads: " + shape_str({pd, ps, ps, pd, ps, ps}) +
                 ", group: " + std::to_string(g));
  if (r.chance(0.7)) y = epilogue_chain(e, r, y, 2);
  if (r.chance(0.5)) {
    const bool max = r.chance(0.5);
    y = e.node(max ? "MaxPool3D" : "AveragePool3D", {y}, v,
               std::string("kernel_shape: [1, 3, 3], pads: [0, 1, 1, 0, 1, 1]") +
                   (!max && r.chance(0.5) ? ", count_include_pad: 1" : ""));
  }
  y = e.node("Reshape", {y, e.const_i64(xs)}, xs);
  return r.chance(0.7) ? add(e, r, y, x) : y;
}

}  // namespace

std::string resample_motif(Emitter& e, Rng& r, const std::string& cur, std::string* name) {
  switch (r.below(8)) {
    case 0:
      *name = "fpn_resize";
      return fpn_resize(e, r, cur);
    case 1:
      *name = "deconv_head";
      return deconv_head(e, r, cur);
    case 2:
      *name = "pad_conv";
      return pad_conv(e, r, cur);
    case 3:
      *name = "pixel_shuffle";
      return pixel_shuffle(e, r, cur);
    case 4:
      *name = "conv1d";
      return conv1d(e, r, cur);
    case 5:
      *name = "detect_tail";
      detect_tail(e, r, cur);
      return cur;
    case 6:
      *name = "volume3d";
      return volume3d(e, r, cur);
    default:
      if (r.chance(0.5) && e.shape(cur)[1] >= 2) {
        *name = "channel_split";
        return channel_split(e, r, cur);
      }
      *name = "broadcast_gate";
      return broadcast_gate(e, r, cur);
  }
}

}  // namespace fusert::fuzz
