// Host references of the generated kernels (tests/cuda_oracle/kernel_reference.h) against the CPU
// kernels, which are the semantic oracle. Every generator registers its entry's reference; the
// tests fill the argument structs as the runtime does (cuda_programs.cc ew_args, row_args and
// the pool/attention launches of runtime/cuda/lower_*.cc), run the reference over the launch grid and
// compare with cpu::run_elementwise_program, cpu::norm_rows_fused, the CPU pools and
// cpu::attention on odd shapes, broadcast operands, -inf rows and padded windows.
//
// Tolerance: |ref - cpu| <= tol * max(1, |cpu|), NaN matching NaN and infinities exact.
// Elementwise programs evaluate the same float expressions as the CPU kernels (bit-identical
// here); reductions differ in summation order (the references accumulate in double; worst
// seen 5.4e-7, on LayerNorm rows with a common offset of 1000), hence kReduceTol.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"
#include "tests/cuda_oracle/kernel_reference.h"

namespace cpu = fusert::cpu;
namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using kern::EpOp;

namespace {

using Vec = std::vector<float>;
using Shape = std::vector<int64_t>;
using Strides = std::vector<std::vector<int64_t>>;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kEwTol = 1e-6, kReduceTol = 2e-6;
constexpr float kSentinel = 12345.f;

Vec random_vec(size_t n, unsigned seed, float lo = -3.f, float hi = 3.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Vec v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::vector<int64_t> contiguous(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t e = 1;
  for (size_t d = s.size(); d-- > 0;) {
    st[d] = e;
    e *= s[d];
  }
  return st;
}

// Same NaN-ness, equal infinities, else |got - want| <= tol * max(1, |want|).
void check_close(const Vec& got, const Vec& want, double tol, const std::string& what) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first = 0;
  double worst = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], w = want[i];
    bool ok = false;
    if (std::isnan(w) || std::isnan(g)) {
      ok = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      ok = g == w;
    } else {
      const double err = std::fabs(static_cast<double>(g) - w) / std::max(1.0, std::fabs(static_cast<double>(w)));
      worst = std::max(worst, err);
      ok = err <= tol;
    }
    if (!ok && bad++ == 0) first = i;
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.size() << " differ, first at " << first << ": got "
                               << got[first] << ", want " << want[first] << " (worst finite error " << worst << ")");
}

const cu::KernelReference& reference_of(const cu::KernelSource& k) {
  const cu::KernelReference* r = cu::find_kernel_reference(k.entry);
  REQUIRE_MESSAGE(r != nullptr, "no reference registered for " << k.entry);
  return *r;
}

kern::ElementwiseInstr instr(EpOp op, int input = -1, float a = 0.f, float b = 0.f) {
  kern::ElementwiseInstr i;
  i.op = op, i.input = input, i.a = a, i.b = b;
  return i;
}

kern::ElementwiseInstr reg_instr(EpOp op, int dst, int src, int src2 = -1) {
  kern::ElementwiseInstr i;
  i.op = op, i.dst = dst, i.src = src, i.src2 = src2;
  return i;
}

kern::ElementwiseProgram program(Shape shape, Strides strides, std::vector<kern::ElementwiseInstr> code) {
  kern::ElementwiseProgram p;
  p.out_shape = std::move(shape);
  p.input_strides = std::move(strides);
  p.code = std::move(code);
  p.stores = {{0, 0}};
  return p;
}

// As cuda_programs.cc ew_args: shape and strides right-aligned to FZ_MAX_RANK, padded with 1 / 0.
FzEwArgs ew_args(const kern::ElementwiseProgram& p, const std::vector<const float*>& in,
                 const std::vector<float*>& out) {
  FzEwArgs a;
  std::memset(&a, 0, sizeof a);
  const size_t pad = FZ_MAX_RANK - p.out_shape.size();
  a.numel = 1;
  for (int d = 0; d < FZ_MAX_RANK; ++d) a.shape[d] = 1;
  for (size_t d = 0; d < p.out_shape.size(); ++d) {
    a.shape[pad + d] = p.out_shape[d];
    a.numel *= p.out_shape[d];
  }
  for (size_t i = 0; i < in.size(); ++i) {
    for (size_t d = 0; d < p.out_shape.size(); ++d) a.in_strides[i][pad + d] = p.input_strides[i][d];
    a.in[i] = in[i];
  }
  for (size_t o = 0; o < out.size(); ++o) a.out[o] = out[o];
  return a;
}

// The highest register a program names, + 1 (the CPU kernel's register file size).
int registers_of(const kern::ElementwiseProgram& p) {
  int n = 1;
  for (const auto& [r, in] : p.loads) n = std::max(n, r + 1);
  for (const auto& ins : p.code) n = std::max({n, ins.dst + 1, ins.src + 1, ins.src2 + 1});
  for (const auto& [r, out] : p.stores) n = std::max(n, r + 1);
  return n;
}

// Runs `prog` on the CPU and through its generated kernel's reference; compares every output.
void check_elementwise(kern::ElementwiseProgram prog, const std::vector<const float*>& in, size_t outputs,
                       const std::string& what) {
  prog.num_registers = registers_of(prog);
  const size_t n = static_cast<size_t>(numel(prog.out_shape));
  std::vector<Vec> want(outputs, Vec(n, kSentinel)), got(outputs, Vec(n, kSentinel));
  std::vector<float*> want_p, got_p;
  for (size_t o = 0; o < outputs; ++o) want_p.push_back(want[o].data()), got_p.push_back(got[o].data());
  cpu::run_elementwise_program(prog, in, want_p);
  const FzEwArgs a = ew_args(prog, in, got_p);
  reference_of(cu::gen_elementwise(prog))(&a, 1, 1, 1);  // grid-stride: any grid covers all
  for (size_t o = 0; o < outputs; ++o) check_close(got[o], want[o], kEwTol, what + " output " + std::to_string(o));
}

// The CPU side of a row/pool value program: `prog` over `shape` with the kernel's inputs and
// strides, returning the register the kernel returns. With `preset`, register 0 starts as
// preset[flat] (a load prepended: the kernel presets register 0 before the program's loads).
Vec cpu_value_program(const kern::ElementwiseProgram& prog, const Shape& shape, std::vector<const float*> in,
                      const Strides& strides, const float* preset) {
  kern::ElementwiseProgram p = prog;
  p.out_shape = shape;
  p.input_strides = strides;
  const int result = prog.code.empty() || prog.stores.empty() ? 0 : prog.stores.front().first;
  if (preset != nullptr) {
    in.push_back(preset);
    p.input_strides.push_back(contiguous(shape));
    p.loads.insert(p.loads.begin(), {0, static_cast<int>(in.size()) - 1});
  }
  p.stores = {{result, 0}};
  p.num_registers = registers_of(p);
  Vec y(static_cast<size_t>(numel(shape)));
  cpu::run_elementwise_program(p, in, {y.data()});
  return y;
}

}  // namespace

TEST_CASE("codegen.reference_registry") {
  CHECK(cu::find_kernel_reference("fz_no_such_kernel") == nullptr);
  CHECK(cu::find_kernel_spec("fz_no_such_kernel") == nullptr);
  // The generator records the spec (data, in libfusert); the oracle builds the reference from it.
  const kern::ElementwiseProgram relu = program({4}, {{1}}, {instr(EpOp::kRelu)});
  const cu::KernelSource k = cu::gen_elementwise(relu);
  const cu::KernelSpec* spec = cu::find_kernel_spec(k.entry);
  REQUIRE(spec != nullptr);
  CHECK(std::holds_alternative<kern::ElementwiseProgram>(*spec));
  // A second registration of an entry is ignored: the first spec stays.
  cu::register_kernel_spec(k.entry, program({4}, {{1}}, {instr(EpOp::kTanh)}));
  CHECK(cu::find_kernel_spec(k.entry) == spec);
  CHECK(std::get<kern::ElementwiseProgram>(*spec).code.size() == relu.code.size());
  CHECK(std::get<kern::ElementwiseProgram>(*spec).code[0].op == EpOp::kRelu);
  const cu::KernelReference* first = cu::find_kernel_reference(k.entry);
  CHECK(first != nullptr);
  CHECK(cu::find_kernel_reference(cu::gen_elementwise(relu).entry) == first);  // stable
}

TEST_CASE("codegen.reference_elementwise_every_op") {
  const Shape shape = {3, 13};
  Vec x = random_vec(39, 1, -4.f, 4.f);
  const Vec specials = {kNaN, kInf, -kInf, 0.f, -0.f, -3.f, 3.f, 6.f, -6.f, 0.5f, -0.5f, 1e-30f, 88.f, -88.f};
  std::copy(specials.begin(), specials.end(), x.begin());
  const Vec t = random_vec(13, 2, -2.f, 2.f);  // per-column operand
  struct OpCase {
    EpOp op;
    float a = 0.f, b = 0.f;
  };
  const std::vector<OpCase> ops = {{EpOp::kAddTensor},
                                   {EpOp::kSubTensor},
                                   {EpOp::kMulTensor},
                                   {EpOp::kDivTensor},
                                   {EpOp::kPowTensor},
                                   {EpOp::kRelu},
                                   {EpOp::kClip, -1.f, 2.f},
                                   {EpOp::kSigmoid},
                                   {EpOp::kHardSigmoid, 0.2f, 0.5f},
                                   {EpOp::kHardSwish},
                                   {EpOp::kGelu},
                                   {EpOp::kGeluTanh},
                                   {EpOp::kTanh},
                                   {EpOp::kErf},
                                   {EpOp::kSqrt},
                                   {EpOp::kNeg},
                                   {EpOp::kExp},
                                   {EpOp::kAbs},
                                   {EpOp::kSoftplus},
                                   {EpOp::kSwish, 1.0f},
                                   {EpOp::kFakeQuantize, 0.05f, -128.f},
                                   {EpOp::kIdentity}};
  for (const OpCase& oc : ops) {
    const bool tensor = oc.op <= EpOp::kPowTensor;
    for (bool first : {false, true}) {
      if (first && !tensor) continue;
      kern::ElementwiseInstr ins = instr(oc.op, tensor ? 1 : -1, oc.a, oc.b);
      ins.operand_first = first;
      const kern::ElementwiseProgram p = program(shape, {{13, 1}, {0, 1}}, {ins});
      check_elementwise(p, {x.data(), t.data()}, 1,
                        "op " + std::to_string(static_cast<int>(oc.op)) + (first ? " operand_first" : ""));
    }
  }
}

TEST_CASE("codegen.reference_elementwise_registers_and_broadcast") {
  // [2, 3, 1, 13]: x contiguous; T read transposed from a [13, 1, 3, 2] buffer; a per-image
  // operand (strides {1, 0, 0, 0}); a scalar. Three registers, three outputs.
  const Shape shape = {2, 3, 1, 13};
  const Vec x = random_vec(78, 3), tt = random_vec(78, 4), per_image = random_vec(2, 5), scalar = {1.75f};
  kern::ElementwiseProgram p = program(shape, {contiguous(shape), {1, 2, 0, 6}, {1, 0, 0, 0}, {0, 0, 0, 0}}, {});
  p.loads = {{1, 1}};
  kern::ElementwiseInstr sub = instr(EpOp::kSubTensor, 2);
  sub.dst = sub.src = 2, sub.operand_first = true;
  kern::ElementwiseInstr div = instr(EpOp::kDivTensor, 3);
  div.dst = div.src = 2;
  p.code = {reg_instr(EpOp::kMulTensor, 2, 0, 1), sub, reg_instr(EpOp::kTanh, 0, 0), div, reg_instr(EpOp::kExp, 1, 1),
            reg_instr(EpOp::kAddTensor, 0, 0, 2)};
  p.stores = {{0, 0}, {2, 1}, {1, 2}};
  check_elementwise(p, {x.data(), tt.data(), per_image.data(), scalar.data()}, 3, "registers [2,3,1,13]");

  // Rank 6 with a [3, 1, 1, 5] operand over [2, 1, 3, 1, 2, 5].
  const Shape s6 = {2, 1, 3, 1, 2, 5};
  const Vec x6 = random_vec(60, 6), o6 = random_vec(15, 7);
  check_elementwise(
      program(s6, {contiguous(s6), {0, 0, 5, 0, 0, 1}}, {instr(EpOp::kAddTensor, 1), instr(EpOp::kHardSwish)}),
      {x6.data(), o6.data()}, 1, "rank 6");

  // Rank 1 (127) with a scalar operand first; rank 0; an explicit load into register 0.
  const Vec x1 = random_vec(127, 8), s1 = {-2.5f};
  kern::ElementwiseInstr rdiv = instr(EpOp::kDivTensor, 1);
  rdiv.operand_first = true;
  check_elementwise(program({127}, {{1}, {0}}, {rdiv}), {x1.data(), s1.data()}, 1, "rank 1 scalar");
  const Vec x0 = {0.3f};
  check_elementwise(program({}, {{}}, {instr(EpOp::kSigmoid)}), {x0.data()}, 1, "rank 0");
  kern::ElementwiseProgram load1 = program({127}, {{0}, {1}}, {instr(EpOp::kMulTensor, 0)});
  load1.loads = {{0, 1}};  // register 0 from input 1, times input 0 (a broadcast scalar)
  check_elementwise(load1, {s1.data(), x1.data()}, 1, "explicit load");
}

TEST_CASE("codegen.reference_elementwise_in_place_and_errors") {
  // Output 0 aliases contiguous input 0 (the in-place update the runtime allows).
  const kern::ElementwiseProgram p =
      program({13, 3}, {{3, 1}, {1, 0}}, {instr(EpOp::kAddTensor, 1), instr(EpOp::kRelu)});
  Vec want = random_vec(39, 9), got = want;
  const Vec bias = random_vec(13, 10);
  cpu::run_elementwise_program(p, {want.data(), bias.data()}, {want.data()});
  const FzEwArgs a = ew_args(p, {got.data(), bias.data()}, {got.data()});
  reference_of(cu::gen_elementwise(p))(&a, 7, 1, 1);
  check_close(got, want, kEwTol, "in place");

  // A program the generator rejects (its source has #error): the reference refuses to run.
  kern::ElementwiseProgram bad = program({4}, {{1}}, {instr(EpOp::kRelu)});
  bad.stores = {{0, FZ_MAX_OUTPUTS}};
  const cu::KernelSource k = cu::gen_elementwise(bad);
  CHECK(k.source.find("#error") != std::string::npos);
  const FzEwArgs b = ew_args(bad, {want.data()}, {got.data()});
  CHECK_THROWS_AS(reference_of(k)(&b, 1, 1, 1), std::logic_error);
}

TEST_CASE("codegen.reference_elementwise_multi") {
  kern::ElementwiseProgram relu = program({127}, {{1}}, {instr(EpOp::kRelu)});
  kern::ElementwiseProgram bias = program({3, 13}, {{13, 1}, {0, 1}}, {instr(EpOp::kAddTensor, 1), instr(EpOp::kRelu)});
  kern::ElementwiseProgram gelu = program({1}, {{1}}, {instr(EpOp::kGeluTanh)});
  const std::vector<kern::ElementwiseProgram> progs = {relu, bias, gelu};
  const Vec x0 = random_vec(127, 11), x1 = random_vec(39, 12), b1 = random_vec(13, 13), x2 = {0.7f};
  const std::vector<std::vector<const float*>> ins = {{x0.data()}, {x1.data(), b1.data()}, {x2.data()}};
  std::vector<Vec> want, got;
  for (size_t m = 0; m < progs.size(); ++m) {
    const size_t n = static_cast<size_t>(numel(progs[m].out_shape));
    want.emplace_back(n, kSentinel);
    got.emplace_back(n, kSentinel);
    cpu::run_elementwise_program(progs[m], ins[m], {want[m].data()});
  }
  FzMultiEwArgs a;
  std::memset(&a, 0, sizeof a);
  for (size_t m = 0; m < progs.size(); ++m) a.m[m] = ew_args(progs[m], ins[m], {got[m].data()});
  const cu::KernelReference& ref = reference_of(cu::gen_elementwise_multi(progs));
  ref(&a, 1, 2, 1);  // blockIdx.y selects the member: member 2 is not launched
  CHECK(got[2][0] == kSentinel);
  ref(&a, 1, 3, 1);
  for (size_t m = 0; m < progs.size(); ++m) check_close(got[m], want[m], kEwTol, "member " + std::to_string(m));
}

TEST_CASE("codegen.reference_layer_norm") {
  // pre: x + residual (full); LayerNorm with scale/shift; post: * scalar, Relu — and a variant
  // without shift whose post adds a per-row operand. Rows of a large common offset check the
  // two-pass variance.
  for (int64_t outer : {1, 3}) {
    for (int64_t inner : {1, 3, 13, 127, 300}) {
      for (bool shift : {true, false}) {
        CAPTURE(outer);
        CAPTURE(inner);
        CAPTURE(shift);
        const size_t n = static_cast<size_t>(outer * inner);
        Vec x = random_vec(n, 20, -2.f, 2.f);
        if (!shift) {
          for (float& v : x) v += 1000.f;
        }
        const Vec res = random_vec(n, 21), scale = random_vec(static_cast<size_t>(inner), 22, 0.5f, 1.5f),
                  sh = random_vec(static_cast<size_t>(inner), 23), s = {-1.5f},
                  per_row = random_vec(static_cast<size_t>(outer), 24);
        cu::RowNormSpec spec;
        spec.kind = kern::RowNorm::kLayerNorm;
        spec.eps = 1e-5f;
        spec.pre.code = {instr(EpOp::kAddTensor, 1)};
        spec.pre.stores = {{0, 0}};
        spec.scale_input = 2;
        spec.shift_input = shift ? 3 : -1;
        spec.post.code = shift ? std::vector<kern::ElementwiseInstr>{instr(EpOp::kMulTensor, 4), instr(EpOp::kRelu)}
                               : std::vector<kern::ElementwiseInstr>{instr(EpOp::kAddTensor, 5)};
        spec.post.stores = {{0, 0}};

        std::vector<kern::EpilogueStep> pro(1), post;
        pro[0].op = EpOp::kAddTensor, pro[0].operand = res.data();
        if (shift) {
          post.resize(2);
          post[0].op = EpOp::kMulTensor, post[0].operand = s.data(), post[0].mode = kern::OperandMode::kScalar;
          post[1].op = EpOp::kRelu;
        } else {
          post.resize(1);
          post[0].op = EpOp::kAddTensor, post[0].operand = per_row.data();
          post[0].mode = kern::OperandMode::kStrided, post[0].strides = {1, 0};
        }
        Vec want(n, kSentinel), got(n, kSentinel);
        cpu::norm_rows_fused(outer, inner, x.data(), pro, kern::RowNorm::kLayerNorm, scale.data(),
                             shift ? sh.data() : nullptr, spec.eps, post, want.data());

        FzRowArgs a;
        std::memset(&a, 0, sizeof a);
        a.outer = outer, a.inner = inner;
        const float* in[] = {x.data(), res.data(), scale.data(), sh.data(), s.data(), per_row.data()};
        const int64_t st[][2] = {{inner, 1}, {inner, 1}, {0, 1}, {0, 1}, {0, 0}, {1, 0}};
        for (int i = 0; i < 6; ++i) a.in[i] = in[i], a.in_strides[i][0] = st[i][0], a.in_strides[i][1] = st[i][1];
        a.out = got.data();
        const cu::KernelReference& ref = reference_of(cu::gen_row_norm(spec));
        ref(&a, static_cast<unsigned>(outer), 1, 1);
        check_close(got, want, kReduceTol, "layernorm");
        CHECK_THROWS_AS(ref(&a, static_cast<unsigned>(outer + 1), 1, 1), std::out_of_range);
      }
    }
  }
}

TEST_CASE("codegen.reference_softmax") {
  // pre: x * scale (scalar) + mask (per column, loaded into register 1); softmax; post: * a
  // per-row operand (or none). Rows: random, all -inf, partly -inf, large values, one NaN.
  const int64_t outer = 5;
  for (int64_t inner : {1, 3, 13, 127, 300}) {
    for (bool with_post : {false, true}) {
      CAPTURE(inner);
      CAPTURE(with_post);
      const size_t n = static_cast<size_t>(outer * inner);
      Vec x = random_vec(n, 30, -4.f, 4.f);
      for (int64_t c = 0; c < inner; ++c) {
        x[static_cast<size_t>(inner + c)] = -kInf;
        if (c % 2 == 0) x[static_cast<size_t>(2 * inner + c)] = -kInf;
        x[static_cast<size_t>(3 * inner + c)] += 80.f;
      }
      x[static_cast<size_t>(4 * inner + inner / 2)] = kNaN;
      Vec mask = random_vec(static_cast<size_t>(inner), 31, -2.f, 0.f);
      if (inner > 3) mask[1] = -kInf;
      const Vec scale = {0.5f}, per_row = random_vec(static_cast<size_t>(outer), 32);

      cu::RowNormSpec spec;
      spec.kind = kern::RowNorm::kSoftmax;
      spec.pre.num_registers = 2;
      spec.pre.loads = {{1, 2}};
      spec.pre.code = {instr(EpOp::kMulTensor, 1), reg_instr(EpOp::kAddTensor, 0, 0, 1)};
      spec.pre.stores = {{0, 0}};
      if (with_post) {
        spec.post.code = {instr(EpOp::kMulTensor, 3)};
        spec.post.stores = {{0, 0}};
      }

      std::vector<kern::EpilogueStep> pro(2), post;
      pro[0].op = EpOp::kMulTensor, pro[0].operand = scale.data(), pro[0].mode = kern::OperandMode::kScalar;
      pro[1].op = EpOp::kAddTensor, pro[1].operand = mask.data();
      pro[1].mode = kern::OperandMode::kStrided, pro[1].strides = {0, 1};
      if (with_post) {
        post.resize(1);
        post[0].op = EpOp::kMulTensor, post[0].operand = per_row.data();
        post[0].mode = kern::OperandMode::kStrided, post[0].strides = {1, 0};
      }
      Vec want(n, kSentinel), got(n, kSentinel);
      cpu::norm_rows_fused(outer, inner, x.data(), pro, kern::RowNorm::kSoftmax, nullptr, nullptr, 0.f, post,
                           want.data());
      for (int64_t c = 0; c < inner; ++c) CHECK(want[static_cast<size_t>(inner + c)] == 0.f);  // -inf row

      FzRowArgs a;
      std::memset(&a, 0, sizeof a);
      a.outer = outer, a.inner = inner;
      const float* in[] = {x.data(), scale.data(), mask.data(), per_row.data()};
      const int64_t st[][2] = {{inner, 1}, {0, 0}, {0, 1}, {1, 0}};
      for (int i = 0; i < 4; ++i) a.in[i] = in[i], a.in_strides[i][0] = st[i][0], a.in_strides[i][1] = st[i][1];
      a.out = got.data();
      reference_of(cu::gen_row_norm(spec))(&a, static_cast<unsigned>(outer), 1, 1);
      check_close(got, want, kReduceTol, "softmax");
    }
  }
}

namespace {

struct PoolCase {
  const char* name;
  cu::PoolSpec::Kind kind;
  int64_t n, c, h, w, oh, ow;
  int64_t kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  bool count_include_pad;
  bool fused;  ///< pre: * per-channel scale + full-shape term; post: + per-channel term, Relu
};

void check_pool(const PoolCase& pc) {
  const std::string name = pc.name;
  CAPTURE(name);
  const Shape xs = {pc.n, pc.c, pc.h, pc.w}, ys = {pc.n, pc.c, pc.oh, pc.ow};
  const size_t xn = static_cast<size_t>(numel(xs)), yn = static_cast<size_t>(numel(ys));
  Vec x = random_vec(xn, 40, -3.f, 3.f);
  if (xn > 5) x[5] = kNaN;  // NaN wins a max, poisons an average
  const Vec ch = random_vec(static_cast<size_t>(pc.c), 41, -1.5f, 1.5f), full = random_vec(xn, 42);

  cu::PoolSpec spec;
  spec.kind = pc.kind;
  spec.kh = pc.kh, spec.kw = pc.kw, spec.stride_h = pc.sh, spec.stride_w = pc.sw, spec.dil_h = pc.dh,
  spec.dil_w = pc.dw;
  spec.pad_top = pc.pt, spec.pad_left = pc.pl, spec.pad_bottom = pc.pb, spec.pad_right = pc.pr;
  spec.count_include_pad = pc.count_include_pad;
  if (pc.fused) {
    spec.pre.code = {instr(EpOp::kMulTensor, 1), instr(EpOp::kAddTensor, 2)};
    spec.pre.stores = {{0, 0}};
    spec.post.code = {instr(EpOp::kAddTensor, 1), instr(EpOp::kRelu)};
    spec.post.stores = {{0, 0}};
  } else {  // as lower_pool: an explicit load, empty code
    spec.pre.loads = {{0, 0}};
    spec.pre.stores = {{0, 0}};
    spec.post.stores = {{0, 0}};
  }
  const std::vector<const float*> in = {x.data(), ch.data(), full.data()};
  const Strides strides = {contiguous(xs), {0, 1, 0, 0}, contiguous(xs)};

  const Vec pre = cpu_value_program(spec.pre, xs, in, strides, nullptr);
  Vec pooled(yn);
  if (pc.kind == cu::PoolSpec::kGlobalAverage) {
    cpu::global_avg_pool(pc.n, pc.c, pc.h * pc.w, pre.data(), pooled.data());
  } else {
    cpu::PoolParams p;
    p.n = pc.n, p.c = pc.c, p.h = pc.h, p.w = pc.w, p.oh = pc.oh, p.ow = pc.ow;
    p.kh = pc.kh, p.kw = pc.kw, p.stride_h = pc.sh, p.stride_w = pc.sw, p.dil_h = pc.dh, p.dil_w = pc.dw;
    p.pad_top = pc.pt, p.pad_left = pc.pl, p.pad_bottom = pc.pb, p.pad_right = pc.pr;
    p.count_include_pad = pc.count_include_pad;
    if (pc.kind == cu::PoolSpec::kMax)
      cpu::max_pool2d(p, pre.data(), pooled.data());
    else
      cpu::avg_pool2d(p, pre.data(), pooled.data());
  }
  const Vec want = cpu_value_program(spec.post, ys, in, strides, pooled.data());

  FzPoolArgs a;
  std::memset(&a, 0, sizeof a);
  a.n = pc.n, a.c = pc.c, a.h = pc.h, a.w = pc.w, a.oh = pc.oh, a.ow = pc.ow;
  for (size_t i = 0; i < in.size(); ++i) {
    a.in[i] = in[i];
    for (int d = 0; d < 4; ++d) a.in_strides[i][d] = strides[i][static_cast<size_t>(d)];
  }
  Vec got(yn, kSentinel);
  a.out = got.data();
  reference_of(cu::gen_pool(spec))(&a, 1, 1, 1);  // grid-stride: any grid covers all
  check_close(got, want, kReduceTol, pc.name);
}

}  // namespace

TEST_CASE("codegen.reference_pool") {
  using K = cu::PoolSpec;
  const std::vector<PoolCase> cases = {
      // name, kind, n, c, h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, cip, fused
      {"max 3x3 s2 p1", K::kMax, 2, 3, 13, 11, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false},
      {"max fused", K::kMax, 2, 3, 13, 11, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true},
      {"max dilated", K::kMax, 1, 3, 13, 11, 13, 11, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, false, true},
      {"max all-pad windows", K::kMax, 1, 2, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, false},
      {"avg include pad", K::kAverage, 2, 3, 13, 11, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, true, false},
      {"avg exclude pad", K::kAverage, 2, 3, 13, 11, 7, 6, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, true},
      {"avg ceil include pad", K::kAverage, 1, 3, 13, 13, 7, 7, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, true, true},
      {"avg ceil exclude pad", K::kAverage, 1, 3, 13, 13, 7, 7, 3, 3, 2, 2, 1, 1, 1, 0, 0, 1, false, false},
      {"avg ceil no pad", K::kAverage, 1, 1, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, true, false},
      {"avg all-pad windows include", K::kAverage, 1, 2, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, false},
      {"avg all-pad windows exclude", K::kAverage, 1, 2, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, false, true},
      {"global 13x7", K::kGlobalAverage, 2, 3, 13, 7, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, true},
      {"global 1x1 c127", K::kGlobalAverage, 1, 127, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, false},
      {"global 3x1", K::kGlobalAverage, 2, 5, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, false, true},
  };
  for (const PoolCase& pc : cases) check_pool(pc);
}

TEST_CASE("codegen.reference_global_pool_remainder") {
  // The conv tail of runtime/cuda/lower_anchor.cc: Relu prologue, post + an [N, C] operand indexed over
  // the pooled [n, c, 1, 1] (strides {c, 1, 0, 0}).
  const int64_t n = 2, c = 3, h = 13, w = 7;
  const Shape xs = {n, c, h, w}, ys = {n, c, 1, 1};
  const Vec x = random_vec(static_cast<size_t>(n * c * h * w), 50), res = random_vec(static_cast<size_t>(n * c), 51);
  cu::PoolSpec spec;
  spec.kind = cu::PoolSpec::kGlobalAverage;
  spec.pre.loads = {{0, 0}};
  spec.pre.code = {instr(EpOp::kRelu)};
  spec.pre.stores = {{0, 0}};
  spec.post.code = {instr(EpOp::kAddTensor, 1)};
  spec.post.stores = {{0, 0}};
  const std::vector<const float*> in = {x.data(), res.data()};
  const Strides strides = {contiguous(xs), {c, 1, 0, 0}};
  const Vec pre = cpu_value_program(spec.pre, xs, in, strides, nullptr);
  Vec pooled(static_cast<size_t>(n * c));
  cpu::global_avg_pool(n, c, h * w, pre.data(), pooled.data());
  const Vec want = cpu_value_program(spec.post, ys, in, strides, pooled.data());

  FzPoolArgs a;
  std::memset(&a, 0, sizeof a);
  a.n = n, a.c = c, a.h = h, a.w = w, a.oh = a.ow = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    a.in[i] = in[i];
    for (int d = 0; d < 4; ++d) a.in_strides[i][d] = strides[i][static_cast<size_t>(d)];
  }
  Vec got(static_cast<size_t>(n * c), kSentinel);
  a.out = got.data();
  reference_of(cu::gen_pool(spec))(&a, 1, 1, 1);
  check_close(got, want, kReduceTol, "global pool remainder");
}

TEST_CASE("codegen.reference_attention") {
  struct AttnCase {
    const char* name;
    int64_t batch, heads, seq, head_dim;
    bool packed;    ///< one QKV buffer [B*S, 3*H*D] (else separate buffers with padded rows)
    int mask_kind;  ///< 0 none, 1 [B, S, S], 2 [S] keys (strides 0, 0), 3 [B, S] keys (stride S, 0)
  };
  const std::vector<AttnCase> cases = {
      {"packed 2x3x13x8 full mask", 2, 3, 13, 8, true, 1},
      {"separate 1x2x1x3", 1, 2, 1, 3, false, 0},
      {"packed 1x1x127x160 key mask", 1, 1, 127, 160, true, 2},
      {"separate 2x2x3x1 batch key mask", 2, 2, 3, 1, false, 3},
  };
  for (const AttnCase& ac : cases) {
    const std::string name = ac.name;
    CAPTURE(name);
    const int64_t b = ac.batch, h = ac.heads, s = ac.seq, d = ac.head_dim, hd = h * d;
    kern::AttentionParams p;
    p.batch = b, p.heads = h, p.seq = s, p.head_dim = d;
    p.scale = 1.f / std::sqrt(static_cast<float>(d));
    Vec qkv, q, k, v;
    if (ac.packed) {
      qkv = random_vec(static_cast<size_t>(b * s * 3 * hd), 60, -1.f, 1.f);
      p.q_stride = p.k_stride = p.v_stride = 3 * hd;
      p.q_col = 0, p.k_col = hd, p.v_col = 2 * hd;
    } else {
      const int64_t row = hd + 5;
      q = random_vec(static_cast<size_t>(b * s * row), 61, -1.f, 1.f);
      k = random_vec(static_cast<size_t>(b * s * row), 62, -1.f, 1.f);
      v = random_vec(static_cast<size_t>(b * s * row), 63, -1.f, 1.f);
      p.q_stride = p.k_stride = p.v_stride = row;
      p.q_col = 2, p.k_col = 1, p.v_col = 3;
    }
    const float* qp = ac.packed ? qkv.data() : q.data();
    const float* kp = ac.packed ? qkv.data() : k.data();
    const float* vp = ac.packed ? qkv.data() : v.data();
    Vec mask;
    if (ac.mask_kind == 1) {
      mask = random_vec(static_cast<size_t>(b * s * s), 64, -1.f, 0.f);
      for (int64_t j = 0; j < s; ++j) mask[static_cast<size_t>((1 * s + 4) * s + j)] = -kInf;  // b 1, query 4
      for (int64_t i = 0; i < s; ++i) mask[static_cast<size_t>(i * s + (i + 1) % s)] = -kInf;
      p.mask_b_stride = s * s, p.mask_i_stride = s;
    } else if (ac.mask_kind == 2) {
      mask = random_vec(static_cast<size_t>(s), 65, -1.f, 0.f);
      for (int64_t j = 100; j < s; ++j) mask[static_cast<size_t>(j)] = -kInf;
    } else if (ac.mask_kind == 3) {
      mask = random_vec(static_cast<size_t>(b * s), 66, -1.f, 0.f);
      mask[static_cast<size_t>(s)] = -kInf;
      p.mask_b_stride = s;
    }
    const float* mp = mask.empty() ? nullptr : mask.data();
    const size_t yn = static_cast<size_t>(b * s * hd);
    Vec want(yn, 0.f), got(yn, kSentinel);
    cpu::attention(p, qp, kp, vp, mp, want.data());

    FzAttnArgs a;
    std::memset(&a, 0, sizeof a);
    a.batch = b, a.heads = h, a.seq = s;
    a.q_stride = p.q_stride, a.k_stride = p.k_stride, a.v_stride = p.v_stride;
    a.q_col = p.q_col, a.k_col = p.k_col, a.v_col = p.v_col;
    a.mask_b_stride = p.mask_b_stride, a.mask_i_stride = p.mask_i_stride;
    a.scale = p.scale;
    a.q = qp, a.k = kp, a.v = vp, a.mask = mp, a.y = got.data();
    cu::AttentionSpec spec;
    spec.head_dim = d, spec.has_mask = mp != nullptr;
    const cu::KernelReference& ref = reference_of(cu::gen_attention(spec));
    ref(&a, static_cast<unsigned>(s), static_cast<unsigned>(h), static_cast<unsigned>(b));
    check_close(got, want, kReduceTol, ac.name);
    CHECK_THROWS_AS(ref(&a, static_cast<unsigned>(s + 1), static_cast<unsigned>(h), static_cast<unsigned>(b)),
                    std::out_of_range);
  }
}
