// run_elementwise_program against a naive per-element interpreter (scalar registers, full
// unravel of every input's strides): hand-computed broadcasts, a multi-chunk program with
// gathered, broadcast and scalar inputs, the contiguous fast path, and NaN propagation.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "tests/kernels/kernel_test_util.h"
#include "tests/kernels/test_fused_reference.h"

namespace cpu = fusert::cpu;
namespace ft = fusert::test;
using cpu::EpOp;
using ft::expect_values;
using ft::kTol;
using ft::max_rel_err;
using ft::random_floats;

namespace {

cpu::ElementwiseInstr instr(EpOp op, int dst, int src, int src2 = -1, int input = -1, bool first = false, float a = 0.f,
                            float b = 0.f) {
  cpu::ElementwiseInstr i;
  i.op = op, i.dst = dst, i.src = src, i.src2 = src2, i.input = input, i.operand_first = first, i.a = a, i.b = b;
  return i;
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Element by element: register 0 <- input 0 unless a load targets it, then loads, then code.
std::vector<std::vector<float>> interpret(const cpu::ElementwiseProgram& prog, const std::vector<const float*>& in,
                                          size_t outputs) {
  int64_t total = 1;
  for (int64_t d : prog.out_shape) total *= d;
  std::vector<std::vector<float>> out(outputs, std::vector<float>(static_cast<size_t>(total)));
  auto value = [&](int input, int64_t f) {
    cpu::EpilogueStep s;
    s.mode = cpu::OperandMode::kStrided, s.strides = prog.input_strides[static_cast<size_t>(input)];
    s.operand = in[static_cast<size_t>(input)];
    return ft::ref_operand(s, prog.out_shape, f, 1, 1);
  };
  for (int64_t f = 0; f < total; ++f) {
    std::vector<float> reg(static_cast<size_t>(prog.num_registers), 0.f);
    bool loads_zero = false;
    for (const auto& l : prog.loads) loads_zero = loads_zero || l.first == 0;
    if (!loads_zero) reg[0] = value(0, f);
    for (const auto& [r, i] : prog.loads) reg[static_cast<size_t>(r)] = value(i, f);
    for (const cpu::ElementwiseInstr& ins : prog.code) {
      cpu::EpilogueStep s;
      s.op = ins.op, s.a = ins.a, s.b = ins.b, s.operand_first = ins.operand_first;
      const float t = ins.src2 >= 0 ? reg[static_cast<size_t>(ins.src2)] : ins.input >= 0 ? value(ins.input, f) : 0.f;
      reg[static_cast<size_t>(ins.dst)] = ft::ref_op(s, reg[static_cast<size_t>(ins.src)], t);
    }
    for (const auto& [r, o] : prog.stores)
      out[static_cast<size_t>(o)][static_cast<size_t>(f)] = reg[static_cast<size_t>(r)];
  }
  return out;
}

}  // namespace

TEST_CASE("elementwise program: hand-computed broadcast add, scalar mul, relu, two outputs") {
  cpu::ElementwiseProgram prog;
  prog.out_shape = {2, 3};
  prog.input_strides = {{3, 1}, {0, 1}, {0, 0}};
  prog.num_registers = 2;
  prog.code = {instr(EpOp::kAddTensor, 0, 0, -1, 1), instr(EpOp::kMulTensor, 1, 0, -1, 2), instr(EpOp::kRelu, 0, 0)};
  prog.stores = {{0, 0}, {1, 1}};
  const float x[] = {1, -2, 3, -4, 5, -6}, b[] = {10, 20, -30}, s[] = {-2};
  std::vector<float> y0(6), y1(6);
  cpu::run_elementwise_program(prog, {x, b, s}, {y0.data(), y1.data()});
  // x + b = {11, 18, -27, 6, 25, -36}
  expect_values(y0, {11, 18, 0, 6, 25, 0});
  expect_values(y1, {-22, -36, 54, -12, -50, 72});
}

TEST_CASE("elementwise program: multi-chunk program with gathered, broadcast and scalar inputs") {
  const std::vector<int64_t> shape = {3, 13, 127, 5};
  const int64_t total = 3 * 13 * 127 * 5;
  cpu::ElementwiseProgram prog;
  prog.out_shape = shape;
  // 0: contiguous; 1: [1, 13, 1, 5] broadcast; 2: stored transposed as [5, 127, 13, 3]; 3: scalar.
  prog.input_strides = {contiguous_strides(shape), {0, 5, 0, 1}, {1, 3, 39, 4953}, {0, 0, 0, 0}};
  prog.num_registers = 4;
  prog.loads = {{2, 2}};
  prog.code = {
      instr(EpOp::kMulTensor, 1, 0, -1, 1),                // r1 = x * bcast
      instr(EpOp::kSubTensor, 1, 1, 2, -1, true),          // r1 = r2 - r1
      instr(EpOp::kDivTensor, 3, 1, -1, 3, true),          // r3 = scalar / r1
      instr(EpOp::kClip, 3, 3, -1, -1, false, -2.f, 2.f),  // r3 = clip(r3)
      instr(EpOp::kAddTensor, 0, 0, 3),                    // r0 = x + r3
      instr(EpOp::kGeluTanh, 0, 0),
  };
  prog.stores = {{0, 0}, {3, 1}, {2, 2}};
  const auto x = random_floats(total, 1), bc = random_floats(13 * 5, 2), tr = random_floats(total, 3);
  const float sc[] = {0.75f};
  const std::vector<const float*> in = {x.data(), bc.data(), tr.data(), sc};
  const auto ref = interpret(prog, in, 3);
  std::vector<std::vector<float>> got(3, std::vector<float>(static_cast<size_t>(total), -777.f));
  cpu::run_elementwise_program(prog, in, {got[0].data(), got[1].data(), got[2].data()});
  for (int o = 0; o < 3; ++o) {
    INFO("output " << o);
    CHECK(max_rel_err(got[o], ref[o]) <= kTol);
  }
}

TEST_CASE("elementwise program: contiguous fast path over odd sizes") {
  for (int64_t n : {1, 3, 13, 127, 4099}) {
    cpu::ElementwiseProgram prog;
    prog.out_shape = {n};
    prog.input_strides = {{1}, {1}};
    prog.num_registers = 1;
    prog.code = {instr(EpOp::kAddTensor, 0, 0, -1, 1), instr(EpOp::kSigmoid, 0, 0),
                 instr(EpOp::kPowTensor, 0, 0, -1, 1, true)};
    prog.stores = {{0, 0}};
    const auto a = random_floats(n, 5), b = random_floats(n, 6, 0.5f, 2.f);
    const auto ref = interpret(prog, {a.data(), b.data()}, 1);
    std::vector<float> got(static_cast<size_t>(n));
    cpu::run_elementwise_program(prog, {a.data(), b.data()}, {got.data()});
    INFO("n " << n);
    CHECK(max_rel_err(got, ref[0]) <= kTol);
  }
}

TEST_CASE("elementwise program: store of a loaded register copies the input; NaN propagates") {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  cpu::ElementwiseProgram prog;
  prog.out_shape = {5};
  prog.input_strides = {{1}};
  prog.num_registers = 2;
  prog.code = {instr(EpOp::kRelu, 1, 0), instr(EpOp::kClip, 1, 1, -1, -1, false, 0.f, 6.f)};
  prog.stores = {{0, 0}, {1, 1}};
  const float x[] = {kNaN, -kInf, kInf, -1.f, 7.f};
  std::vector<float> copy(5), act(5);
  cpu::run_elementwise_program(prog, {x}, {copy.data(), act.data()});
  expect_values(copy, {kNaN, -kInf, kInf, -1, 7}, 0.0);
  expect_values(act, {kNaN, 0, 6, 0, 6}, 0.0);
}

TEST_CASE("elementwise program: an output may overwrite its contiguous input in place") {
  cpu::ElementwiseProgram prog;
  prog.out_shape = {4099};
  prog.input_strides = {{1}};
  prog.num_registers = 2;
  prog.code = {instr(EpOp::kRelu, 1, 0)};
  prog.stores = {{1, 0}, {0, 1}};  // relu(x) over x first, then x itself: must be the old x
  auto x = random_floats(4099, 8);
  const auto ref = interpret(prog, {x.data()}, 2);
  std::vector<float> copy(4099);
  cpu::run_elementwise_program(prog, {x.data()}, {x.data(), copy.data()});
  CHECK(max_rel_err(x, ref[0]) == 0.0);
  CHECK(max_rel_err(copy, ref[1]) == 0.0);
}

TEST_CASE("elementwise program: per-channel and per-row broadcasts over rows longer than a chunk") {
  // [2, 3, 4099]: chunks lie inside one row (read in place) or straddle two (gathered).
  cpu::ElementwiseProgram prog;
  prog.out_shape = {2, 3, 4099};
  prog.input_strides = {{0, 1, 0}, {0, 0, 1}, {3 * 4099, 4099, 1}};  // per channel, per column, full
  prog.num_registers = 2;
  prog.loads = {{1, 2}};
  prog.code = {instr(EpOp::kMulTensor, 0, 0, -1, 1), instr(EpOp::kSubTensor, 0, 0, 1, -1, true),
               instr(EpOp::kHardSigmoid, 0, 0, -1, -1, false, 0.2f, 0.5f)};
  prog.stores = {{0, 0}};
  const auto per_ch = random_floats(3, 91), per_col = random_floats(4099, 92), full = random_floats(2 * 3 * 4099, 93);
  const std::vector<const float*> in = {per_ch.data(), per_col.data(), full.data()};
  const auto ref = interpret(prog, in, 1);
  std::vector<float> got(ref[0].size(), -777.f);
  cpu::run_elementwise_program(prog, in, {got.data()});
  CHECK(max_rel_err(got, ref[0]) <= kTol);
}
