// oneDNN anchors (kernels/cpu/onednn.h) against the reference kernels (conv2d_fused, gemm_fused,
// matmul_fused, themselves checked against naive double-precision loops in test_fused_*.cc):
// odd channel counts (1, 3, 13, 127), strides, dilations, asymmetric pads, groups and depthwise,
// every post-op kind the lowering emits (eltwise, binary per-channel / per-row / scalar / full,
// the residual as the sum post-op, the output aliasing the residual), chains oneDNN cannot
// finish (the rest runs after the primitive), and NaN/Inf inputs, which must propagate as in the
// reference kernels although oneDNN's Relu and Clip post-ops would turn NaN into a bound.
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
using cpu::OperandMode;
using ft::conv;

namespace {

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// A named epilogue chain over an output of `total` elements with `channels` channels and
// `rows` rows (conv: images); operands owned here.
struct Chain {
  std::string name;
  std::vector<std::vector<float>> operands;
  cpu::Epilogue ep;
};

cpu::EpilogueStep unary(EpOp op, float a = 0.f, float b = 0.f) {
  cpu::EpilogueStep s;
  s.op = op;
  s.a = a;
  s.b = b;
  return s;
}

void tensor(Chain* c, EpOp op, OperandMode mode, int64_t count, uint32_t seed, bool first = false) {
  c->operands.push_back(ft::random_floats(count, seed, 0.5f, 1.5f));
  cpu::EpilogueStep s;
  s.op = op;
  s.mode = mode;
  s.operand_first = first;
  c->ep.steps.push_back(s);
}

// Binds operand pointers (operands are not moved after this).
void bind(Chain* c) {
  size_t k = 0;
  for (cpu::EpilogueStep& s : c->ep.steps)
    if (cpu::is_tensor_op(s.op)) s.operand = c->operands[k++].data();
}

std::vector<Chain> chains(int64_t total, int64_t channels, int64_t rows, const std::vector<int64_t>& out_shape) {
  std::vector<Chain> out;
  auto add = [&](const std::string& name) -> Chain& {
    out.push_back(Chain());
    out.back().name = name;
    out.back().ep.out_shape = out_shape;
    return out.back();
  };
  add("none");
  add("relu").ep.steps = {unary(EpOp::kRelu)};
  add("relu6").ep.steps = {unary(EpOp::kClip, 0.f, 6.f)};
  add("two hardsigmoids").ep.steps = {unary(EpOp::kHardSigmoid, 0.2f, 0.5f), unary(EpOp::kHardSigmoid, 1 / 6.f, 0.5f)};
  add("hardswish, sigmoid, tanh").ep.steps = {unary(EpOp::kHardSwish), unary(EpOp::kSigmoid), unary(EpOp::kTanh)};
  add("gelu erf, gelu tanh, abs").ep.steps = {unary(EpOp::kGelu), unary(EpOp::kGeluTanh), unary(EpOp::kAbs)};
  add("softplus (after the primitive), neg, exp").ep.steps = {unary(EpOp::kSoftplus), unary(EpOp::kNeg),
                                                              unary(EpOp::kExp)};
  {
    Chain& c = add("residual + relu (sum post-op)");
    tensor(&c, EpOp::kAddTensor, OperandMode::kFull, total, 11);
    c.ep.steps.push_back(unary(EpOp::kRelu));
  }
  {
    Chain& c = add("per-channel mul, add, sigmoid");
    tensor(&c, EpOp::kMulTensor, OperandMode::kPerChannel, channels, 12);
    tensor(&c, EpOp::kAddTensor, OperandMode::kPerChannel, channels, 13);
    c.ep.steps.push_back(unary(EpOp::kSigmoid));
  }
  {
    Chain& c = add("relu, full mul, per-row add, scalar div");
    c.ep.steps.push_back(unary(EpOp::kRelu));
    tensor(&c, EpOp::kMulTensor, OperandMode::kFull, total, 14);
    tensor(&c, EpOp::kAddTensor, OperandMode::kPerRow, rows, 15);
    tensor(&c, EpOp::kDivTensor, OperandMode::kScalar, 1, 16);
  }
  {
    Chain& c = add("scalar sub operand-first, pow (after the primitive)");
    tensor(&c, EpOp::kSubTensor, OperandMode::kScalar, 1, 17, true);
    tensor(&c, EpOp::kPowTensor, OperandMode::kScalar, 1, 18);
  }
  for (Chain& c : out) bind(&c);
  return out;
}

// Max |got - want| / (1 + |want|) over finite values; NaN and Inf must match exactly.
double compare(const std::vector<float>& got, const std::vector<float>& want) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const float a = want[i], b = got[i];
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) return 1e30;
      continue;
    }
    if (std::isinf(a) || std::isinf(b)) {
      if (a != b) return 1e30;
      continue;
    }
    worst = std::max(worst, std::abs(static_cast<double>(a) - b) / (1 + std::abs(static_cast<double>(a))));
  }
  return worst;
}

}  // namespace

TEST_CASE("onednn: convolutions with every post-op chain match the reference conv2d_fused") {
  if (!cpu::onednn::built()) {
    MESSAGE("skipped: this build has no oneDNN");
    return;
  }
  const std::vector<cpu::ConvParams> shapes = {
      conv(1, 1, 5, 7, 1, 3, 1, 1, 1, 1, 1, 1, 1),     // one channel
      conv(2, 3, 9, 8, 13, 3, 2, 1, 1, 1, 1, 1, 1),    // RGB stem, stride 2, batch 2
      conv(1, 13, 7, 7, 127, 1, 1, 1, 1, 0, 0, 0, 0),  // 1x1, odd widths
      conv(1, 127, 6, 5, 13, 3, 1, 2, 1, 2, 2, 2, 2),  // dilation 2
      conv(1, 16, 9, 9, 16, 3, 2, 1, 16, 0, 0, 1, 1),  // depthwise, asymmetric pads (TF SAME)
      conv(1, 12, 6, 6, 18, 3, 1, 1, 3, 1, 0, 1, 2),   // grouped, asymmetric pads
  };
  for (const cpu::ConvParams& p : shapes) {
    const int64_t total = p.n * p.m * p.oh * p.ow;
    const std::vector<float> w = ft::random_floats(p.m * (p.c / p.group) * p.kh * p.kw, 3);
    const std::vector<float> b = ft::random_floats(p.m, 4);
    std::vector<float> x = ft::random_floats(p.n * p.c * p.h * p.w, 5);
    for (Chain& c : chains(total, p.m, p.n, {p.n, p.m, p.oh, p.ow})) {
      CAPTURE(c.name);
      CAPTURE(p.c);
      CAPTURE(p.m);
      CAPTURE(p.group);
      std::string why;
      auto a = cpu::onednn::ConvAnchor::create(p, w.data(), b.data(), c.ep, &why);
      REQUIRE_MESSAGE(a, why);
      std::vector<float> want(static_cast<size_t>(total)), got(want.size());
      cpu::conv2d_fused(p, x.data(), w.data(), b.data(), c.ep, want.data());
      a->run(x.data(), c.ep, got.data());
      CHECK(compare(got, want) <= 1e-5);
      // NaN and Inf in the input land where the reference puts them.
      std::vector<float> xs = x;
      xs[0] = kNaN;
      xs[xs.size() / 2] = kInf;
      xs[xs.size() - 1] = -kInf;
      cpu::conv2d_fused(p, xs.data(), w.data(), b.data(), c.ep, want.data());
      a->run(xs.data(), c.ep, got.data());
      CHECK(compare(got, want) <= 1e-5);
    }
  }
}

TEST_CASE("onednn: the output may be the residual's own buffer (sum post-op in place, binary via scratch)") {
  if (!cpu::onednn::built()) return;
  const cpu::ConvParams p = conv(1, 13, 7, 7, 13, 3, 1, 1, 1, 1, 1, 1, 1);
  const int64_t total = p.n * p.m * p.oh * p.ow;
  const std::vector<float> w = ft::random_floats(p.m * p.c * 9, 21), b = ft::random_floats(p.m, 22);
  const std::vector<float> x = ft::random_floats(p.n * p.c * p.h * p.w, 23);
  for (int variant = 0; variant < 2; ++variant) {
    CAPTURE(variant);
    const std::vector<float> residual = ft::random_floats(total, 24);
    std::vector<float> other = ft::random_floats(total, 25);
    Chain c;
    c.ep.out_shape = {p.n, p.m, p.oh, p.ow};
    c.operands = {residual, other};
    cpu::EpilogueStep add;
    add.op = EpOp::kAddTensor;
    cpu::EpilogueStep mul = add;
    mul.op = EpOp::kMulTensor;
    c.ep.steps = variant == 0 ? std::vector<cpu::EpilogueStep>{add, unary(EpOp::kRelu)}
                              : std::vector<cpu::EpilogueStep>{unary(EpOp::kRelu), mul, add};
    bind(&c);
    std::vector<float> want(static_cast<size_t>(total));
    cpu::conv2d_fused(p, x.data(), w.data(), b.data(), c.ep, want.data());
    std::string why;
    auto a = cpu::onednn::ConvAnchor::create(p, w.data(), b.data(), c.ep, &why);
    REQUIRE_MESSAGE(a, why);
    // y is the buffer of the residual operand (the memory planner may place it there).
    std::vector<float>& y = variant == 0 ? c.operands[0] : c.operands[1];
    a->run(x.data(), c.ep, y.data());
    CHECK(compare(y, want) <= 1e-5);
  }
}

TEST_CASE("onednn: Gemm (transposes, alpha, beta, per-column and scalar C) and batched MatMul match the reference") {
  if (!cpu::onednn::built()) return;
  struct G {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
    int64_t c_cols;
  };
  for (const G& t : {G{1, 1, 1, false, false, 1.f, 1.f, 1}, G{3, 13, 7, false, true, 1.f, 1.f, 13},
                     G{17, 127, 33, true, false, 0.5f, 2.f, 127}, G{5, 8, 3, true, true, 1.5f, 0.f, 0}}) {
    cpu::GemmParams p;
    p.m = t.m, p.n = t.n, p.k = t.k, p.trans_a = t.ta, p.trans_b = t.tb, p.alpha = t.alpha, p.beta = t.beta;
    p.c_rows = t.c_cols ? 1 : 0, p.c_cols = t.c_cols;
    const std::vector<float> a = ft::random_floats(p.m * p.k, 31), b = ft::random_floats(p.k * p.n, 32);
    const std::vector<float> c = ft::random_floats(std::max<int64_t>(t.c_cols, 1), 33);
    const float* cp = t.c_cols ? c.data() : nullptr;
    for (Chain& ch : chains(p.m * p.n, p.n, p.m, {p.m, p.n})) {
      CAPTURE(ch.name);
      CAPTURE(p.n);
      std::string why;
      auto g = cpu::onednn::GemmAnchor::create_gemm(p, b.data(), cp, ch.ep, &why);
      REQUIRE_MESSAGE(g, why);
      std::vector<float> want(static_cast<size_t>(p.m * p.n)), got(want.size());
      cpu::gemm_fused(p, a.data(), b.data(), cp, ch.ep, want.data());
      g->run(a.data(), nullptr, ch.ep, got.data());
      CHECK(compare(got, want) <= 1e-5);
      std::vector<float> as = a;
      as[0] = kNaN;
      as[as.size() - 1] = kInf;
      cpu::gemm_fused(p, as.data(), b.data(), cp, ch.ep, want.data());
      g->run(as.data(), nullptr, ch.ep, got.data());
      CHECK(compare(got, want) <= 1e-5);
    }
  }
  for (int shared_b = 0; shared_b < 2; ++shared_b) {
    for (int const_b = 0; const_b < 2; ++const_b) {
      cpu::MatMulParams p;
      p.batch = 3, p.m = 5, p.n = 13, p.k = 7;
      for (int64_t i = 0; i < p.batch; ++i) {
        p.a_batch_index.push_back(i);
        p.b_batch_index.push_back(shared_b ? 0 : i);
      }
      const std::vector<float> a = ft::random_floats(p.batch * p.m * p.k, 41);
      const std::vector<float> b = ft::random_floats((shared_b ? 1 : p.batch) * p.k * p.n, 42);
      for (Chain& ch : chains(p.batch * p.m * p.n, p.n, p.batch * p.m, {p.batch, p.m, p.n})) {
        CAPTURE(ch.name);
        CAPTURE(shared_b);
        CAPTURE(const_b);
        std::string why;
        auto g = cpu::onednn::GemmAnchor::create_matmul(p, const_b ? b.data() : nullptr, nullptr, ch.ep, &why);
        REQUIRE_MESSAGE(g, why);
        std::vector<float> want(static_cast<size_t>(p.batch * p.m * p.n)), got(want.size());
        cpu::matmul_fused(p, a.data(), b.data(), ch.ep, want.data());
        g->run(a.data(), b.data(), ch.ep, got.data());
        CHECK(compare(got, want) <= 1e-5);
        if (!shared_b || !const_b) {  // a bias needs B folded into one GEMM
          CHECK_FALSE(cpu::onednn::GemmAnchor::create_matmul(p, const_b ? b.data() : nullptr, b.data(), ch.ep, &why));
          continue;
        }
        // The bias as oneDNN's argument against the reference with the bias Add as the first step,
        // NaN/Inf inputs included (the reference path puts the Add back in front).
        const std::vector<float> bias = ft::random_floats(p.n, 43);
        cpu::Epilogue with_bias = ch.ep;
        cpu::EpilogueStep add;
        add.op = EpOp::kAddTensor;
        add.mode = cpu::OperandMode::kPerChannel;
        add.operand = bias.data();
        with_bias.steps.insert(with_bias.steps.begin(), add);
        auto gb = cpu::onednn::GemmAnchor::create_matmul(p, b.data(), bias.data(), ch.ep, &why);
        REQUIRE_MESSAGE(gb, why);
        std::vector<float> as = a;
        for (int special = 0; special < 2; ++special) {
          if (special) as[0] = kNaN, as[as.size() - 1] = kInf;
          cpu::matmul_fused(p, as.data(), b.data(), with_bias, want.data());
          gb->run(as.data(), b.data(), ch.ep, got.data());
          CHECK(compare(got, want) <= 1e-5);
        }
      }
    }
  }
}

TEST_CASE("onednn: what cannot run on oneDNN is refused with the reason") {
  if (!cpu::onednn::built()) {
    std::string why;
    CHECK_FALSE(
        cpu::onednn::ConvAnchor::create(conv(1, 1, 3, 3, 1, 1, 1, 1, 1, 0, 0, 0, 0), nullptr, nullptr, {}, &why));
    CHECK(why.find("no oneDNN") != std::string::npos);
    return;
  }
  const cpu::ConvParams p = conv(1, 4, 5, 5, 4, 3, 1, 1, 1, 1, 1, 1, 1);
  const std::vector<float> w = ft::random_floats(4 * 4 * 9, 51);
  std::string why;
  cpu::Epilogue ln;
  ln.tail = cpu::EpTail::kLayerNorm;
  CHECK_FALSE(cpu::onednn::ConvAnchor::create(p, w.data(), nullptr, ln, &why));
  CHECK(why.find("LayerNorm tail on a convolution") != std::string::npos);
  std::vector<float> bad = w;
  bad[7] = kNaN;  // NaN weights and a Relu post-op: oneDNN would hide the NaN
  cpu::Epilogue relu;
  relu.steps = {unary(EpOp::kRelu)};
  relu.out_shape = {1, 4, 5, 5};
  CHECK_FALSE(cpu::onednn::ConvAnchor::create(p, bad.data(), nullptr, relu, &why));
  CHECK(why.find("NaN or Inf") != std::string::npos);
  cpu::GemmParams g;
  g.m = 2, g.n = 3, g.k = 4, g.c_rows = 2, g.c_cols = 3;
  const std::vector<float> gb = ft::random_floats(12, 52), gc = ft::random_floats(6, 53);
  CHECK_FALSE(cpu::onednn::GemmAnchor::create_gemm(g, gb.data(), gc.data(), {}, &why));
  CHECK(why.find("per-column") != std::string::npos);
}

TEST_CASE("onednn: reducing tails run after the primitive: conv + GlobalAveragePool + post, GEMM + LayerNorm + post") {
  if (!cpu::onednn::built()) return;
  for (const cpu::ConvParams& p :
       {conv(2, 13, 7, 6, 19, 3, 1, 1, 1, 1, 1, 1, 1), conv(1, 8, 5, 5, 8, 3, 2, 1, 8, 0, 0, 1, 1)}) {
    const std::vector<float> w = ft::random_floats(p.m * (p.c / p.group) * 9, 61), b = ft::random_floats(p.m, 62);
    std::vector<float> x = ft::random_floats(p.n * p.c * p.h * p.w, 63);
    const std::vector<float> shift = ft::random_floats(p.m, 64);
    cpu::Epilogue ep;
    ep.out_shape = {p.n, p.m, p.oh, p.ow};
    ep.steps = {unary(EpOp::kRelu)};
    ep.tail = cpu::EpTail::kGlobalAvgPool;
    cpu::EpilogueStep add;
    add.op = EpOp::kAddTensor;
    add.mode = OperandMode::kPerChannel;
    add.operand = shift.data();
    ep.post = {add, unary(EpOp::kSigmoid)};
    std::string why;
    auto a = cpu::onednn::ConvAnchor::create(p, w.data(), b.data(), ep, &why);
    REQUIRE_MESSAGE(a, why);
    for (int special = 0; special < 2; ++special) {
      CAPTURE(special);
      if (special) x[3] = kNaN;
      std::vector<float> want(static_cast<size_t>(p.n * p.m)), got(want.size());
      cpu::conv2d_fused(p, x.data(), w.data(), b.data(), ep, want.data());
      a->run(x.data(), ep, got.data());
      CHECK(compare(got, want) <= 1e-5);
    }
  }
  cpu::GemmParams g;
  g.m = 9, g.n = 37, g.k = 21, g.trans_b = true, g.c_rows = 1, g.c_cols = 37;
  const std::vector<float> a = ft::random_floats(g.m * g.k, 71), b = ft::random_floats(g.k * g.n, 72);
  const std::vector<float> c = ft::random_floats(g.n, 73), scale = ft::random_floats(g.n, 74, 0.5f, 1.5f),
                           bias = ft::random_floats(g.n, 75), residual = ft::random_floats(g.m * g.n, 76);
  cpu::Epilogue ep;
  ep.out_shape = {g.m, g.n};
  cpu::EpilogueStep add;
  add.op = EpOp::kAddTensor;
  add.operand = residual.data();
  ep.steps = {unary(EpOp::kGelu), add};
  ep.tail = cpu::EpTail::kLayerNorm;
  ep.ln_scale = scale.data();
  ep.ln_shift = bias.data();
  ep.ln_epsilon = 1e-5f;
  ep.post = {unary(EpOp::kRelu)};
  std::string why;
  auto gemm = cpu::onednn::GemmAnchor::create_gemm(g, b.data(), c.data(), ep, &why);
  REQUIRE_MESSAGE(gemm, why);
  std::vector<float> want(static_cast<size_t>(g.m * g.n)), got(want.size());
  cpu::gemm_fused(g, a.data(), b.data(), c.data(), ep, want.data());
  gemm->run(a.data(), nullptr, ep, got.data());
  CHECK(compare(got, want) <= 1e-5);
  cpu::MatMulParams mm;
  mm.batch = 2, mm.m = 4, mm.n = 37, mm.k = 21;
  mm.a_batch_index = {0, 1}, mm.b_batch_index = {0, 0};
  const std::vector<float> ma = ft::random_floats(2 * 4 * 21, 77), mr = ft::random_floats(2 * 4 * 37, 78);
  ep.out_shape = {2, 4, 37};
  ep.steps[1].operand = mr.data();
  auto matmul = cpu::onednn::GemmAnchor::create_matmul(mm, b.data(), nullptr, ep, &why);
  REQUIRE_MESSAGE(matmul, why);
  std::vector<float> mwant(2 * 4 * 37), mgot(mwant.size());
  cpu::matmul_fused(mm, ma.data(), b.data(), ep, mwant.data());
  matmul->run(ma.data(), nullptr, ep, mgot.data());
  CHECK(compare(mgot, mwant) <= 1e-5);
}

TEST_CASE("onednn: conv-sum as two primitives, the second adding into the first's output (sum post-op)") {
  if (!cpu::onednn::built()) return;
  {  // A 1x1 image where the dilated 2x2 kernel sees only padding: refused (oneDNN 2.6 wrote
     // outside its buffers on it with a sum post-op; found by the planner fuzzer).
    const cpu::ConvParams p = conv(1, 8, 1, 1, 2, 2, 1, 2, 1, 1, 1, 1, 1);
    const std::vector<float> w = ft::random_floats(2 * 8 * 4, 80);
    std::string why;
    CHECK_FALSE(cpu::onednn::ConvAnchor::create(p, w.data(), nullptr, {}, &why));
    CHECK(why.find("only padding") != std::string::npos);
  }
  const cpu::ConvParams p1 = conv(1, 13, 6, 5, 7, 3, 1, 1, 1, 1, 1, 1, 1),
                        p2 = conv(1, 5, 6, 5, 7, 1, 1, 1, 1, 0, 0, 0, 0);
  {
    const int64_t total = p1.n * p1.m * p1.oh * p1.ow;
    const std::vector<float> w1 = ft::random_floats(p1.m * p1.c * p1.kh * p1.kw, 81),
                             w2 = ft::random_floats(p2.m * p2.c * p2.kh * p2.kw, 82), b = ft::random_floats(p1.m, 83);
    const std::vector<float> x1 = ft::random_floats(p1.n * p1.c * p1.h * p1.w, 84),
                             x2 = ft::random_floats(p2.n * p2.c * p2.h * p2.w, 85);
    cpu::Epilogue relu;
    relu.out_shape = {p1.n, p1.m, p1.oh, p1.ow};
    relu.steps = {unary(EpOp::kRelu)};
    std::vector<float> want(static_cast<size_t>(total)), got(want.size());
    cpu::conv2d_sum_fused(p1, x1.data(), w1.data(), p2, x2.data(), w2.data(), b.data(), relu, want.data());
    cpu::Epilogue plain;
    plain.out_shape = relu.out_shape;
    cpu::Epilogue add_relu = relu;
    cpu::EpilogueStep add;
    add.op = EpOp::kAddTensor;
    add_relu.steps.insert(add_relu.steps.begin(), add);
    std::string why;
    auto second = cpu::onednn::ConvAnchor::create(p2, w2.data(), nullptr, plain, &why);
    auto first = cpu::onednn::ConvAnchor::create(p1, w1.data(), b.data(), add_relu, &why);
    REQUIRE_MESSAGE((second && first), why);
    second->run(x2.data(), plain, got.data());
    add_relu.steps[0].operand = got.data();
    first->run(x1.data(), add_relu, got.data());
    CHECK(compare(got, want) <= 1e-5);
  }
}

TEST_CASE("onednn: a horizontal GEMM (concatenated weights, member epilogues with LayerNorm) matches gemm_horizontal") {
  if (!cpu::onednn::built()) return;
  const int64_t m = 11, k = 19;
  const std::vector<int64_t> widths = {7, 13, 32};
  const int64_t total = 52;
  const std::vector<float> a = ft::random_floats(m * k, 91), w = ft::random_floats(total * k, 92),
                           b = ft::random_floats(total, 93), scale = ft::random_floats(13, 94, 0.5f, 1.5f);
  std::string why;
  auto h = cpu::onednn::HorizontalAnchor::create(m, k, widths, w.data(), b.data(), &why);
  REQUIRE_MESSAGE(h, why);
  auto members = [&](std::vector<std::vector<float>>* ys) {
    std::vector<cpu::HorizontalMember> mem(3);
    ys->assign(3, {});
    for (size_t i = 0; i < 3; ++i) {
      mem[i].n = widths[i];
      mem[i].ep.out_shape = {m, widths[i]};
      (*ys)[i].assign(static_cast<size_t>(m * widths[i]), 0.f);
      mem[i].y = (*ys)[i].data();
    }
    mem[0].ep.steps = {unary(EpOp::kGelu)};
    mem[1].ep.tail = cpu::EpTail::kLayerNorm;
    mem[1].ep.ln_scale = scale.data();
    mem[1].ep.post = {unary(EpOp::kRelu)};
    return mem;
  };
  std::vector<std::vector<float>> want, got;
  auto mw = members(&want), mg = members(&got);
  cpu::gemm_horizontal(m, k, a.data(), w.data(), b.data(), mw);
  h->run(a.data(), mg);
  for (size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(compare(got[i], want[i]) <= 1e-5);
  }
}

namespace {

cpu::PoolParams pool(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k, int64_t stride, int64_t pt, int64_t pl,
                     int64_t pb, int64_t pr, bool ceil_mode) {
  cpu::PoolParams p;
  p.n = n, p.c = c, p.h = h, p.w = w, p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_top = pt, p.pad_left = pl, p.pad_bottom = pb, p.pad_right = pr;
  const int64_t add = ceil_mode ? stride - 1 : 0;  // ONNX: ceil((len + pads - k) / stride) + 1
  p.oh = (h + pt + pb - k + add) / stride + 1;
  p.ow = (w + pl + pr - k + add) / stride + 1;
  return p;
}

// NCHW [n, c, h, w] -> the native layout `l` (NativeLayout: dense strides, or channel-blocked
// strides followed by the block), or back; written out here, not with oneDNN's reorders.
std::vector<float> permute(const std::vector<float>& v, const std::vector<int64_t>& l, int64_t n, int64_t c, int64_t h,
                           int64_t w, bool to_native) {
  REQUIRE((l.size() == 4 || l.size() == 5));
  const int64_t b = l.size() == 5 ? l[4] : 1;
  std::vector<float> out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t y = 0; y < h; ++y)
        for (int64_t x = 0; x < w; ++x) {
          const size_t nchw = static_cast<size_t>(((i * c + ch) * h + y) * w + x);
          const size_t nat = static_cast<size_t>(i * l[0] + (ch / b) * l[1] + y * l[2] + x * l[3] + ch % b);
          if (to_native) {
            out[nat] = v[nchw];
          } else {
            out[nchw] = v[nat];
          }
        }
  return out;
}

}  // namespace

TEST_CASE(
    "onednn: MaxPool and AveragePool match max_pool2d / avg_pool2d in NCHW and the native layout, NaN/Inf included") {
  if (!cpu::onednn::built()) return;
  const std::vector<cpu::PoolParams> shapes = {
      pool(1, 64, 112, 112, 3, 2, 1, 1, 1, 1, false),  // the ResNet stem
      pool(1, 1, 5, 7, 2, 1, 0, 0, 0, 0, false),       // one channel
      pool(2, 13, 9, 8, 3, 2, 1, 0, 0, 1, false),      // batch 2, asymmetric pads
      pool(1, 3, 7, 7, 2, 2, 0, 0, 0, 0, true),        // ceil_mode: the last window passes the input
      pool(1, 127, 6, 5, 3, 2, 1, 1, 1, 1, true),      // odd channels, ceil_mode with pads
  };
  for (const cpu::PoolParams& base : shapes) {
    for (int kind = 0; kind < 3; ++kind) {  // max, average excluding pads, average including pads
      cpu::PoolParams p = base;
      const bool max = kind == 0;
      p.count_include_pad = kind == 2;
      CAPTURE(kind);
      CAPTURE(p.c);
      CAPTURE(p.h);
      std::string why;
      auto a = cpu::onednn::PoolAnchor::create(p, max, &why);
      const int64_t over = (p.oh - 1) * p.stride_h + p.kh - p.h - p.pad_top - p.pad_bottom;
      if (kind == 2 && over > 0) {  // oneDNN would divide by the whole window
        CHECK(!a);
        CHECK(why.find("count_include_pad") != std::string::npos);
        continue;
      }
      REQUIRE_MESSAGE(a, why);
      const int64_t in = p.n * p.c * p.h * p.w, out = p.n * p.c * p.oh * p.ow;
      std::vector<float> x = ft::random_floats(in, 11);
      for (int special = 0; special < 2; ++special) {
        CAPTURE(special);
        if (special) x[0] = kNaN, x[static_cast<size_t>(in / 2)] = kInf, x[static_cast<size_t>(in - 1)] = -kInf;
        std::vector<float> want(static_cast<size_t>(out)), got(want.size());
        if (max) {
          cpu::max_pool2d(p, x.data(), want.data());
        } else {
          cpu::avg_pool2d(p, x.data(), want.data());
        }
        // The layout a convolution picks here: NHWC (AVX-512) or nChw8c (AVX2) when C allows.
        const std::vector<int64_t> li = a->native_input(), lo = a->native_output();
        for (int layout = 0; layout < 4; ++layout) {  // bit 0: source native, bit 1: destination native
          CAPTURE(layout);
          const bool src = (layout & 1) && !li.empty(), dst = (layout & 2) && !lo.empty();
          a->use_native(src, dst);
          std::vector<float> xs = src ? permute(x, li, p.n, p.c, p.h, p.w, true) : x;
          a->run(xs.data(), got.data());
          CHECK(compare(dst ? permute(got, lo, p.n, p.c, p.oh, p.ow, false) : got, want) <= 1e-6);
        }
      }
    }
  }
  std::string why;
  cpu::PoolParams d = pool(1, 4, 9, 9, 3, 1, 0, 0, 0, 0, false);
  d.dil_h = d.dil_w = 2;
  d.oh = d.ow = 5;
  CHECK(!cpu::onednn::PoolAnchor::create(d, true, &why));
  CHECK(why == "dilated pooling");
  // ceil_mode with a last column window wholly in the right padding (starts at 5 of 5 columns)
  CHECK(!cpu::onednn::PoolAnchor::create(pool(1, 8, 6, 5, 3, 3, 1, 1, 1, 1, true), true, &why));
  CHECK(why == "an output window sees only padding");
}
