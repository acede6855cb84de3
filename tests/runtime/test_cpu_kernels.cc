// The CPU backend on oneDNN against its reference kernels, whole models: the layout pass keeps
// activations between oneDNN convolutions in oneDNN's layout (no reorders), as sources and as
// the residuals of sum post-ops, and the outputs stay those of the reference kernels, NaN and
// Inf included; a buffer read by anything else (a view, an Add, the caller) stays NCHW.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/onednn.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// conv chain (3x3, 1x1, depthwise 3x3) with ReLU6s, then a residual Add of the chain's input,
// then a conv read by a Flatten view: only the activations between the three convs qualify.
const char* kChain = R"(fusert: 1
name: chain
inputs: [{name: x, shape: [1, 16, 10, 10]}]
outputs: [y]
initializers:
  - {name: a.w, shape: [32, 16, 3, 3]}
  - {name: a.b, shape: [32]}
  - {name: b.w, shape: [32, 32, 1, 1]}
  - {name: c.w, shape: [32, 1, 3, 3]}
  - {name: d.w, shape: [16, 32, 1, 1]}
  - {name: e.w, shape: [8, 16, 1, 1]}
nodes:
  - {name: a, op: Conv, inputs: [x, a.w, a.b], outputs: [a1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: a_act, op: Clip, inputs: [a1], outputs: [a2], attrs: {min: 0.0, max: 6.0}}
  - {name: b, op: Conv, inputs: [a2, b.w], outputs: [b1], attrs: {kernel_shape: [1, 1]}}
  - {name: b_act, op: Relu, inputs: [b1], outputs: [b2]}
  - {name: c, op: Conv, inputs: [b2, c.w], outputs: [c1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 32}}
  - {name: d, op: Conv, inputs: [c1, d.w], outputs: [d1], attrs: {kernel_shape: [1, 1]}}
  - {name: res, op: Add, inputs: [d1, x], outputs: [r]}
  - {name: e, op: Conv, inputs: [r, e.w], outputs: [e1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [e1], outputs: [y]}
)";

// ResNet-style joins: an identity residual (c's sum post-op adds a2, which a convolution wrote)
// and a conv-sum (d(r2) + e(b2)); every activation passes between convolutions, as the source
// of one and the residual of another, so all four stay in oneDNN's layout.
const char* kResiduals = R"(fusert: 1
name: residuals
inputs: [{name: x, shape: [1, 16, 10, 10]}]
outputs: [y]
initializers:
  - {name: a.w, shape: [16, 16, 3, 3]}
  - {name: a.b, shape: [16]}
  - {name: b.w, shape: [16, 16, 1, 1]}
  - {name: c.w, shape: [16, 16, 3, 3]}
  - {name: d.w, shape: [16, 16, 1, 1]}
  - {name: e.w, shape: [16, 16, 1, 1]}
  - {name: f.w, shape: [8, 16, 1, 1]}
nodes:
  - {name: a, op: Conv, inputs: [x, a.w, a.b], outputs: [a1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: a_act, op: Relu, inputs: [a1], outputs: [a2]}
  - {name: b, op: Conv, inputs: [a2, b.w], outputs: [b1], attrs: {kernel_shape: [1, 1]}}
  - {name: b_act, op: Relu, inputs: [b1], outputs: [b2]}
  - {name: c, op: Conv, inputs: [b2, c.w], outputs: [c1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: res, op: Add, inputs: [c1, a2], outputs: [r1]}
  - {name: res_act, op: Relu, inputs: [r1], outputs: [r2]}
  - {name: d, op: Conv, inputs: [r2, d.w], outputs: [d1], attrs: {kernel_shape: [1, 1]}}
  - {name: e, op: Conv, inputs: [b2, e.w], outputs: [e1], attrs: {kernel_shape: [1, 1]}}
  - {name: join, op: Add, inputs: [d1, e1], outputs: [j1]}
  - {name: join_act, op: Relu, inputs: [j1], outputs: [j2]}
  - {name: f, op: Conv, inputs: [j2, f.w], outputs: [f1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [f1], outputs: [y]}
)";

// An inverted-residual block with a squeeze-excitation gate at batch 8. Left to pick, oneDNN
// (AVX-512) ran the 1x1 + depthwise pair in one pass in nChw16c while the projection 1x1 takes
// NHWC, and the gate's Mul (a follow step) converted d2 to the projection's layout. fusert now asks
// for NHWC: the pair runs oneDNN's two-pass kernel once per image (its batch's intermediate is 14
// MB: kernels/cpu/onednn/conv_dw.cc split_batch), and d2 and s1 stay NHWC.
const char* kGatedBlock = R"(fusert: 1
name: gated
inputs: [{name: x, shape: [8, 24, 56, 56]}]
outputs: [y]
initializers:
  - {name: e.w, shape: [144, 24, 1, 1]}
  - {name: d.w, shape: [144, 1, 3, 3]}
  - {name: p.w, shape: [24, 144, 1, 1]}
nodes:
  - {name: e, op: Conv, inputs: [x, e.w], outputs: [e1], attrs: {kernel_shape: [1, 1]}}
  - {name: e_act, op: Relu, inputs: [e1], outputs: [e2]}
  - {name: d, op: Conv, inputs: [e2, d.w], outputs: [d1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1], group: 144}}
  - {name: d_act, op: Relu, inputs: [d1], outputs: [d2]}
  - {name: gap, op: GlobalAveragePool, inputs: [d2], outputs: [a1]}
  - {name: sig, op: Sigmoid, inputs: [a1], outputs: [a2]}
  - {name: gate, op: Mul, inputs: [d2, a2], outputs: [s1]}
  - {name: p, op: Conv, inputs: [s1, p.w], outputs: [p1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [p1], outputs: [y]}
)";

// An inception block: a stem conv read by two sibling 1x1 convs (a horizontal group under
// fusion) and a MaxPool; three branches joined by a channel Concat read by one conv. The Concat
// copies its inputs in whatever layout their producers wrote and writes the layout conv f reads.
const char* kInception = R"(fusert: 1
name: inception
inputs: [{name: x, shape: [1, 16, 10, 10]}]
outputs: [y]
initializers:
  - {name: s.w, shape: [16, 16, 3, 3]}
  - {name: p.w, shape: [8, 16, 1, 1]}
  - {name: q.w, shape: [8, 16, 1, 1]}
  - {name: q3.w, shape: [16, 8, 3, 3]}
  - {name: m.w, shape: [8, 16, 1, 1]}
  - {name: f.w, shape: [8, 32, 1, 1]}
nodes:
  - {name: s, op: Conv, inputs: [x, s.w], outputs: [s1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: s_act, op: Relu, inputs: [s1], outputs: [s2]}
  - {name: p, op: Conv, inputs: [s2, p.w], outputs: [p1], attrs: {kernel_shape: [1, 1]}}
  - {name: q, op: Conv, inputs: [s2, q.w], outputs: [q1], attrs: {kernel_shape: [1, 1]}}
  - {name: q3, op: Conv, inputs: [q1, q3.w], outputs: [q3o], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: pool, op: MaxPool, inputs: [s2], outputs: [m0], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: m, op: Conv, inputs: [m0, m.w], outputs: [m1], attrs: {kernel_shape: [1, 1]}}
  - {name: cat, op: Concat, inputs: [p1, q3o, m1], outputs: [c], attrs: {axis: 1}}
  - {name: f, op: Conv, inputs: [c, f.w], outputs: [f1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [f1], outputs: [y]}
)";

// Steps that follow their input's layout between convolutions (runtime/cpu/layout_follow.h), at
// batch 2: BatchNorm, ReLU, a GlobalAveragePool (its output plain), the squeeze-and-excitation
// Mul by a per-channel gate, a nearest 2x Resize and a residual Add of the Resize's output.
const char* kFollow = R"(fusert: 1
name: follow
inputs: [{name: x, shape: [2, 16, 6, 6]}]
outputs: [y]
initializers:
  - {name: a.w, shape: [16, 16, 3, 3]}
  - {name: bn.s, shape: [16], init: bn_scale}
  - {name: bn.b, shape: [16], init: uniform}
  - {name: bn.m, shape: [16], init: uniform}
  - {name: bn.v, shape: [16], init: bn_var}
  - {name: s.w, shape: [16, 16, 1, 1]}
  - {name: scales, shape: [4], value: [1.0, 1.0, 2.0, 2.0]}
  - {name: b.w, shape: [16, 16, 3, 3]}
  - {name: c.w, shape: [8, 16, 1, 1]}
nodes:
  - {name: a, op: Conv, inputs: [x, a.w], outputs: [a1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: bn, op: BatchNormalization, inputs: [a1, bn.s, bn.b, bn.m, bn.v], outputs: [a2], attrs: {epsilon: 0.001}}
  - {name: act, op: Relu, inputs: [a2], outputs: [a3]}
  - {name: gap, op: GlobalAveragePool, inputs: [a3], outputs: [g0]}
  - {name: s, op: Conv, inputs: [g0, s.w], outputs: [s1], attrs: {kernel_shape: [1, 1]}}
  - {name: sig, op: Sigmoid, inputs: [s1], outputs: [s2]}
  - {name: gate, op: Mul, inputs: [a3, s2], outputs: [a4]}
  - {name: up, op: Resize, inputs: [a4, "", scales], outputs: [u], attrs: {mode: nearest}}
  - {name: b, op: Conv, inputs: [u, b.w], outputs: [b1], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: res, op: Add, inputs: [b1, u], outputs: [r]}
  - {name: c, op: Conv, inputs: [r, c.w], outputs: [c1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [c1], outputs: [y]}
)";

// A ConvNeXt block: depthwise 7x7, Transpose to NHWC, LayerNorm over channels, the MLP as two
// MatMuls, Transpose back, the per-channel layer scale and the residual Add, then a 1x1 conv. The
// Transposes read and write the convolutions' layout (a copy when that is NHWC); the Mul and Add
// after the second follow it.
const char* kConvNeXt = R"(fusert: 1
name: convnext
inputs: [{name: x, shape: [1, 16, 9, 9]}]
outputs: [y]
initializers:
  - {name: stem.w, shape: [16, 16, 1, 1]}
  - {name: dw.w, shape: [16, 1, 7, 7]}
  - {name: ln.s, shape: [16], init: bn_scale}
  - {name: ln.b, shape: [16], init: uniform}
  - {name: up.w, shape: [16, 64]}
  - {name: down.w, shape: [64, 16]}
  - {name: gamma, shape: [16, 1, 1], init: uniform}
  - {name: out.w, shape: [8, 16, 1, 1]}
nodes:
  - {name: stem, op: Conv, inputs: [x, stem.w], outputs: [s1], attrs: {kernel_shape: [1, 1]}}
  - {name: dw, op: Conv, inputs: [s1, dw.w], outputs: [d1], attrs: {kernel_shape: [7, 7], pads: [3, 3, 3, 3], group: 16}}
  - {name: t1, op: Transpose, inputs: [d1], outputs: [t1o], attrs: {perm: [0, 2, 3, 1]}}
  - {name: ln, op: LayerNormalization, inputs: [t1o, ln.s, ln.b], outputs: [l1], attrs: {axis: -1, epsilon: 0.000001}}
  - {name: up, op: MatMul, inputs: [l1, up.w], outputs: [u1]}
  - {name: act, op: Relu, inputs: [u1], outputs: [u2]}
  - {name: down, op: MatMul, inputs: [u2, down.w], outputs: [m1]}
  - {name: t2, op: Transpose, inputs: [m1], outputs: [t2o], attrs: {perm: [0, 3, 1, 2]}}
  - {name: scale, op: Mul, inputs: [t2o, gamma], outputs: [g1]}
  - {name: res, op: Add, inputs: [g1, s1], outputs: [r1]}
  - {name: out, op: Conv, inputs: [r1, out.w], outputs: [o1], attrs: {kernel_shape: [1, 1]}}
  - {name: flat, op: Flatten, inputs: [o1], outputs: [y]}
)";

std::unique_ptr<Session> open(const std::string& path, const std::string& kernels, const std::string& fusion) {
  SessionOptions o;
  o.seeded = true;
  o.cpu_kernels = kernels;
  o.fusion = fusion;
  auto s = Session::load(path, o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(s.value());
}

// Whether oneDNN on this machine runs these 16-channel 10x10 convolutions in a layout other than
// NCHW of the size of NCHW (NHWC: brgconv on AVX-512; nChw8c: jit on AVX2) that the layout pass
// can keep; a padded blocked layout would not be offered (reorders stay inside the call).
bool native_layout_offered() {
  cpu::ConvParams p;
  p.c = p.m = 16, p.h = p.w = p.oh = p.ow = 10, p.kh = p.kw = 3;
  p.pad_top = p.pad_left = p.pad_bottom = p.pad_right = 1;
  const std::vector<float> w(16 * 16 * 9, 0.01f);
  std::string why;
  auto a = cpu::onednn::ConvAnchor::create(p, w.data(), nullptr, cpu::Epilogue(), &why);
  return a && !a->native_output().empty();
}

}  // namespace

TEST_CASE("cpu kernels: activations between oneDNN convolutions stay in oneDNN's layout; outputs match the reference") {
  if (!cpu::onednn::built()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  // chain, none: a1 .. r pass between convs and the Clip, Relu and Add that follow their layout
  // (the Add copies the graph input x into d1's layout); chain, all: a2, b2, c1 pass between
  // convs, and r (d's epilogue adds the graph input x, reordered into d's destination) is read by
  // conv e only. residuals, none: every activation but x; all: a2, b2, r2, j2 (see kResiduals).
  // follow, raw: every activation between conv a and conv c (g0 and the gate are per channel).
  struct Case {
    const char* name;
    const char* yaml;
    const char* fusion;
    const char* kept;
    std::vector<const char*> details;  // in the --explain report
  };
  const std::vector<Case> cases = {
      {"chain",
       kChain,
       "none",
       "7 activation(s) kept",
       {"a_act: own kernel Clip (follows its inputs' layout); reorders removed (layout kept native): in a1 out",
        "res: own kernel Add (follows its inputs' layout); reorders removed (layout kept native): in d1 out"}},
      {"chain", kChain, "all", "4 activation(s) kept", {}},
      {"residuals",
       kResiduals,
       "none",
       "11 activation(s) kept",
       {"res: own kernel Add (follows its inputs' layout); reorders removed (layout kept native): in c1 a2 out"}},
      {"residuals",
       kResiduals,
       "all",
       "4 activation(s) kept",
       {"cross:c+2: ", "reorders removed (layout kept native): in b2 a2 out", "native layout: out; conv1",
        "reorders removed (layout kept native): in r2 b2 out"}},
      // none: s1 and s2 pass through the Relu; p1, q1, q3o, m0, m1 and c between convolutions,
      // the pool and the Concat. all: s2 (read by the horizontal 1x1 pair and the pool) joins them; the
      // horizontal step writes p1 and q1 NCHW (its members' outputs are not offered).
      {"follow",
       kFollow,
       "raw",
       "",  // 7, or 8 where oneDNN offers its blocked layout for conv s's 1x1 map (AVX2)
       {"bn: own kernel BatchNormalization (follows its inputs' layout); reorders removed (layout kept native): in a1 "
        "out",
        "gap: own kernel GlobalAveragePool (follows its inputs' layout); reorders removed (layout kept native): in a3",
        "gate: own kernel Mul (follows its inputs' layout); reorders removed (layout kept native): in a3 out",
        "up: own kernel resize_2d (follows its inputs' layout); reorders removed (layout kept native): in a4 out",
        "res: own kernel Add (follows its inputs' layout); reorders removed (layout kept native): in b1 u out"}},
      // all: the Resize writes u NCHW for the conv-sum step, which reads it twice (source, residual).
      {"follow",
       kFollow,
       "all",
       "3 activation(s) kept",
       {"gate: own kernel Mul (follows its inputs' layout); reorders removed (layout kept native): in a3 out",
        "up: own kernel resize_2d (follows its inputs' layout); reorders removed (layout kept native): in a4"}},
      // convnext: t1 reads d1 and t2 writes t2o in the convolutions' layout; the layer-scale Mul
      // and the residual Add keep it up to conv out.
      {"convnext",
       kConvNeXt,
       "none",
       "",
       {"t1: own kernel Transpose (follows its inputs' layout); reorders removed (layout kept native): in d1",
        "t2: own kernel Transpose (follows its inputs' layout); reorders removed (layout kept native): out",
        "scale: own kernel Mul (follows its inputs' layout); reorders removed (layout kept native): in t2o out",
        "res: own kernel Add (follows its inputs' layout); reorders removed (layout kept native): in g1 s1 out"}},
      {"gated",
       kGatedBlock,
       "all",
       "",
       {"gate: own kernel Mul (follows its inputs' layout); reorders removed (layout kept native): in d2 out",
        "reorders removed (layout kept native): in s1"}},
      {"inception",
       kInception,
       "none",
       "8 activation(s) kept",
       {"reorders removed (layout kept native): in p1 q3o m1 out"}},
      {"inception",  // the sibling 1x1 convs p and q apart on oneDNN, each keeping the layout
       kInception,
       "all",
       "7 activation(s) kept",
       {"  p: ", "  q: ", "reorders removed (layout kept native): in p1 q3o m1 out",
        "reorders removed (layout kept native): in s2 out"}},
  };
  const bool dense = native_layout_offered();
  if (!dense) MESSAGE("oneDNN picks padded layouts on this machine: no layout to keep; outputs checked");
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const char* fusion = k.fusion;
    CAPTURE(fusion);
    const std::string path = scratch(std::string(k.name) + ".yaml");
    write_file(path, k.yaml);
    auto dnn = open(path, "onednn", fusion);
    auto ref = open(path, "reference", fusion);
    const std::string report = dnn->backend_report();
    CAPTURE(report);
    bool block = false;  // chain, all: b and the depthwise c as one 1x1+depthwise step, b2 inside it
    for (const FusionGroup* grp : dnn->fusion_plan().kernel_groups())
      block |= grp->kind == GroupKind::kPointwiseDepthwise;
    if (dense) {
      if (*k.kept) CHECK(contains(report, block ? "3 activation(s) kept" : k.kept));
      for (const char* d : k.details) CHECK(contains(report, d));
    } else {
      CHECK(contains(report, "0 activation(s) kept"));
    }
    if (std::string(k.name) == "gated" && contains(report, "brgconv")) {  // AVX-512: the pair in NHWC, per image
      CHECK(contains(report, "ref_fused_convolution"));
      CHECK(contains(report, "; one call per image"));
    }
    if (std::string(k.name) == "residuals" && std::string(fusion) == "all") {
      // The cross step c + res + res_act adds a2 with the sum post-op and reads it last: r2
      // takes a2's buffer (Step::in_place_of), and the outputs below still match.
      const Graph& g = dnn->graph();
      CHECK(dnn->plan().slots[static_cast<size_t>(g.find_value("r2"))].root == g.find_value("a2"));
    }
    TensorMap in = dnn->seeded_inputs(3);
    for (int special = 0; special < 2; ++special) {
      CAPTURE(special);
      if (special) {  // NaN and Inf reach the convolutions that read native buffers
        in.at("x").f32()[5] = std::numeric_limits<float>::quiet_NaN();
        in.at("x").f32()[777] = -std::numeric_limits<float>::infinity();
      }
      auto a = dnn->run(in);
      auto b = ref->run(in);
      REQUIRE(a.ok());
      REQUIRE(b.ok());
      const Tensor& ya = a->at("y");
      const Tensor& yb = b->at("y");
      REQUIRE(ya.numel() == yb.numel());
      int mismatches = 0;
      for (int64_t i = 0; i < ya.numel(); ++i) {
        const float u = ya.f32()[i], v = yb.f32()[i];
        if (std::isnan(u) || std::isnan(v)) {
          mismatches += std::isnan(u) != std::isnan(v);
        } else if (std::isinf(u) || std::isinf(v)) {
          mismatches += u != v;
        } else {
          mismatches += std::abs(u - v) > 1e-4f * (1.f + std::abs(v));
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("cpu kernels: the fair unfused baseline (fusion none) folds BatchNorm and computes what the raw graph does") {
  const std::string path = std::string(FUSERT_SOURCE_DIR) + "/models/resnet18.yaml";
  SessionOptions raw;
  raw.seeded = true;
  raw.fusion = "raw";
  SessionOptions fair = raw;
  fair.fusion = "none";
  auto a = Session::load(path, raw);
  auto b = Session::load(path, fair);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->stats().kernels == 68);  // 20 convs, 20 BatchNorms, ... one kernel per node
  CHECK((*b)->stats().kernels == 48);  // the 20 BatchNorms folded into their convs
  TensorMap in = (*a)->seeded_inputs(1);
  auto ya = (*a)->run(in), yb = (*b)->run(in);
  REQUIRE(ya.ok());
  REQUIRE(yb.ok());
  const Tensor& u = ya->at("logits");
  const Tensor& v = yb->at("logits");
  double num = 0, den = 0;
  for (int64_t i = 0; i < u.numel(); ++i) {
    num += (u.f32()[i] - v.f32()[i]) * static_cast<double>(u.f32()[i] - v.f32()[i]);
    den += u.f32()[i] * static_cast<double>(u.f32()[i]);
  }
  CHECK(std::sqrt(num / den) < 1e-5);
}
