// oneDNN block fusion (kernels/cpu/onednn.h PointwiseDepthwiseAnchor: a 1x1 convolution with
// the depthwise convolution as its dw post-op) against two reference convolutions
// (conv2d_fused, checked against naive loops in test_fused_conv.cc): odd channel counts (1, 3,
// 13, 127), batch 2, strides 1 and 2, kernels 3 and 5, TF-style pads, eltwise chains on both
// sides, NaN/Inf inputs; and the refusals with their reasons.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "kernels/cpu/onednn.h"
#include "tests/kernels/kernel_test_util.h"

namespace cpu = fusert::cpu;
namespace ft = fusert::test;
using cpu::EpOp;

namespace {

cpu::Epilogue chain(std::vector<EpOp> ops, float clip_hi = 6.f) {
  cpu::Epilogue ep;
  for (EpOp op : ops) {
    cpu::EpilogueStep s;
    s.op = op;
    if (op == EpOp::kClip) s.a = 0.f, s.b = clip_hi;
    ep.steps.push_back(s);
  }
  return ep;
}

struct Block {
  cpu::ConvParams p1, p2;
};

// x [n, c, h, w] -> 1x1 -> [n, m, h, w] -> depthwise k x k, stride s, pads (pt, pl, pb, pr).
Block block(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k, int64_t s, int64_t pt, int64_t pl,
            int64_t pb, int64_t pr) {
  Block b;
  b.p1.n = n, b.p1.c = c, b.p1.h = h, b.p1.w = w, b.p1.m = m, b.p1.oh = h, b.p1.ow = w;
  b.p2.n = n, b.p2.c = m, b.p2.h = h, b.p2.w = w, b.p2.m = m, b.p2.kh = b.p2.kw = k, b.p2.group = m;
  b.p2.stride_h = b.p2.stride_w = s;
  b.p2.pad_top = pt, b.p2.pad_left = pl, b.p2.pad_bottom = pb, b.p2.pad_right = pr;
  b.p2.oh = (h + pt + pb - k) / s + 1;
  b.p2.ow = (w + pl + pr - k) / s + 1;
  return b;
}

// Max |got - want| / (1 + |want|) over finite values; NaN and Inf must match exactly.
double compare(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float a = want[i], b = got[i];
    if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      if (!(std::isnan(a) && std::isnan(b)) && a != b) return 1e30;
      continue;
    }
    worst = std::max(worst, std::abs(static_cast<double>(a) - b) / (1 + std::abs(static_cast<double>(a))));
  }
  return worst;
}

struct Weights {
  std::vector<float> w1, b1, w2, b2;
  explicit Weights(const Block& b)
      : w1(ft::random_floats(b.p1.m * b.p1.c, 11)),
        b1(ft::random_floats(b.p1.m, 12)),
        w2(ft::random_floats(b.p2.m * b.p2.kh * b.p2.kw, 13)),
        b2(ft::random_floats(b.p2.m, 14)) {}
};

std::unique_ptr<cpu::onednn::PointwiseDepthwiseAnchor> make(const Block& b, const Weights& w, const cpu::Epilogue& e1,
                                                            const cpu::Epilogue& e2, bool two_pass, std::string* why) {
  return cpu::onednn::PointwiseDepthwiseAnchor::create(b.p1, w.w1.data(), w.b1.data(), e1, b.p2, w.w2.data(),
                                                       w.b2.data(), e2, two_pass, why);
}

std::vector<float> reference(const Block& b, const Weights& w, const cpu::Epilogue& e1, const cpu::Epilogue& e2,
                             const std::vector<float>& x) {
  std::vector<float> mid(static_cast<size_t>(b.p1.n * b.p1.m * b.p1.h * b.p1.w));
  std::vector<float> y(static_cast<size_t>(b.p2.n * b.p2.m * b.p2.oh * b.p2.ow));
  cpu::conv2d_fused(b.p1, x.data(), w.w1.data(), w.b1.data(), e1, mid.data());
  cpu::conv2d_fused(b.p2, mid.data(), w.w2.data(), w.b2.data(), e2, y.data());
  return y;
}

}  // namespace

TEST_CASE("onednn: a 1x1 + depthwise block (dw post-op) matches two reference convolutions") {
  if (!cpu::onednn::built()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  const std::vector<Block> blocks = {
      block(1, 16, 112, 112, 96, 3, 2, 1, 1, 1, 1),  // MobileNetV2 block 1 (single pass on AVX2)
      block(1, 32, 56, 56, 192, 3, 1, 1, 1, 1, 1),   // single pass on AVX2
      block(1, 24, 20, 20, 144, 3, 1, 1, 1, 1, 1),   // stride 1
      block(2, 3, 9, 7, 13, 3, 1, 1, 1, 1, 1),       // batch 2, odd sizes
      block(1, 1, 5, 5, 1, 3, 2, 1, 1, 1, 1),        // one channel
      block(1, 13, 7, 9, 127, 5, 1, 2, 2, 2, 2),     // kernel 5
      block(1, 8, 14, 14, 48, 3, 2, 0, 0, 1, 1),     // TF SAME, stride 2: the pad at the end
      block(1, 10, 11, 11, 40, 5, 2, 2, 2, 2, 2),    // kernel 5, stride 2, odd size
      block(8, 24, 56, 56, 144, 3, 1, 1, 1, 1, 1),   // MobileNetV2 features.3 at batch 8 (single pass)
      block(8, 16, 112, 112, 96, 3, 2, 1, 1, 1, 1),  // features.2 at batch 8, stride 2
  };
  const std::vector<std::pair<cpu::Epilogue, cpu::Epilogue>> chains = {
      {chain({EpOp::kClip}), chain({EpOp::kClip})},
      {chain({EpOp::kRelu}), chain({})},
      {chain({}), chain({EpOp::kHardSwish})},
      {chain({EpOp::kHardSwish}), chain({EpOp::kSigmoid})},
  };
  int single_pass = 0, made = 0;
  for (const Block& b : blocks) {
    const Weights w(b);
    const std::vector<float> x = ft::random_floats(b.p1.n * b.p1.c * b.p1.h * b.p1.w, 5);
    for (const auto& [e1, e2] : chains) {
      CAPTURE(b.p1.c);
      CAPTURE(b.p1.m);
      CAPTURE(b.p2.kh);
      CAPTURE(b.p2.stride_h);
      CAPTURE(e1.steps.size());
      std::string why;
      single_pass += make(b, w, e1, e2, false, &why) ? 1 : 0;
      auto a = make(b, w, e1, e2, true, &why);  // the two-pass implementation too: the post-op chain is ours
      REQUIRE_MESSAGE(a, why);
      ++made;
      std::vector<float> got(static_cast<size_t>(b.p2.n * b.p2.m * b.p2.oh * b.p2.ow), -7.f);
      a->run(x.data(), got.data());
      CHECK(compare(got, reference(b, w, e1, e2, x)) <= 1e-5);
      std::vector<float> xs = x;  // NaN and Inf land where the reference puts them
      xs[0] = std::numeric_limits<float>::quiet_NaN();
      xs[xs.size() / 2] = std::numeric_limits<float>::infinity();
      a->run(xs.data(), got.data());
      CHECK(compare(got, reference(b, w, e1, e2, xs)) <= 1e-5);
      CHECK(a->describe().find("dw " + std::to_string(b.p2.kh) + "x") != std::string::npos);
    }
  }
  // Which pairs run as one pass depends on the ISA oneDNN finds (AVX2 here: the large maps).
  MESSAGE(single_pass << " of " << made << " blocks have oneDNN's single-pass kernel on this machine");
}

TEST_CASE("onednn: 1x1 + depthwise blocks oneDNN cannot fuse are refused with the reason") {
  if (!cpu::onednn::built()) return;
  auto refused = [](Block b, const cpu::Epilogue& e1, const cpu::Epilogue& e2, const std::string& reason) {
    const Weights w(b);
    std::string why;
    CHECK_FALSE(make(b, w, e1, e2, true, &why));
    CHECK_MESSAGE(why.find(reason) != std::string::npos, why);
  };
  Block three_by_three = block(1, 8, 10, 10, 16, 3, 1, 1, 1, 1, 1);
  three_by_three.p1.kh = three_by_three.p1.kw = 3;
  refused(three_by_three, chain({}), chain({}), "not a 1x1 convolution");
  Block dilated = block(1, 8, 10, 10, 16, 3, 1, 2, 2, 2, 2);
  dilated.p2.dil_h = dilated.p2.dil_w = 2;
  refused(dilated, chain({}), chain({}), "not square");
  refused(block(1, 8, 10, 10, 16, 3, 1, 0, 0, 0, 0), chain({}), chain({}), "ceil(H / stride)");  // "valid"
  cpu::Epilogue with_operand = chain({});
  cpu::EpilogueStep add;
  add.op = EpOp::kAddTensor;
  add.mode = cpu::OperandMode::kPerChannel;
  with_operand.steps.push_back(add);
  refused(block(1, 8, 10, 10, 16, 3, 1, 1, 1, 1, 1), with_operand, chain({}), "with an operand");
  refused(block(1, 8, 10, 10, 16, 3, 1, 1, 1, 1, 1), chain({EpOp::kClip}, 6.f), chain({EpOp::kClip}, 1.f),
          "other parameters");
  Block nan_weights = block(1, 8, 10, 10, 16, 3, 1, 1, 1, 1, 1);
  Weights w(nan_weights);
  w.w2[3] = std::numeric_limits<float>::quiet_NaN();
  std::string why;
  CHECK_FALSE(make(nan_weights, w, chain({}), chain({}), true, &why));
  CHECK(why.find("NaN") != std::string::npos);
}
