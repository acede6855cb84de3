// The reductions on the CUDA backend (runtime/cuda/lower_reduce.cc: kernels/cuda/reduce.cuh, no host
// fallback), end to end on the emulated device against the CPU backend (whose reductions pass ONNX's
// conformance cases): ReduceMax, Min, Prod, LogSumExp, L1, L2, SumSquare and LogSum over a middle
// axis, two adjacent axes and the last axis; ArgMax (first and, with select_last_index, last of equal
// values) and ArgMin; LRN of sizes 3 and 4 (an even window: one more channel after than before); CumSum of f32
// (inclusive, and exclusive reverse over the last axis, sums in double: equal to the bit) and of i64. Max, Min and the
// arg reductions select values: equal to the bit; the rest sum in double as the CPU does: rel. L2 <= 1e-6.
#include <cstdio>
#include <string>

#include "tests/cuda_emu/emu_compare.h"

using namespace fusert;

namespace {

const char* kReduce = R"(fusert: 1
name: reductions
inputs:
  - {name: x, shape: [3, 5, 4, 6]}
outputs: [mx, mn, pr, lse, l1, l2, ss, ls, am, aml, an, lrn3, lrn4, cs, csx, csi]
initializers:
  - {name: two, shape: [], dtype: i64, value: 2}
  - {name: minus1, shape: [], dtype: i32, value: -1}
  - {name: one, shape: [1], dtype: i64, value: [1]}
nodes:
  - {name: mx, op: ReduceMax, inputs: [x], outputs: [mx], attrs: {axes: [1], keepdims: 1}}
  - {name: mn, op: ReduceMin, inputs: [x], outputs: [mn], attrs: {axes: [2, 3], keepdims: 0}}
  - {name: pr, op: ReduceProd, inputs: [x], outputs: [pr], attrs: {axes: [3], keepdims: 1}}
  - {name: lse, op: ReduceLogSumExp, inputs: [x], outputs: [lse], attrs: {axes: [1, 2], keepdims: 1}}
  - {name: l1, op: ReduceL1, inputs: [x], outputs: [l1], attrs: {axes: [-1], keepdims: 0}}
  - {name: l2, op: ReduceL2, inputs: [x], outputs: [l2], attrs: {axes: [1], keepdims: 1}}
  - {name: ss, op: ReduceSumSquare, inputs: [x], outputs: [ss], attrs: {axes: [2], keepdims: 1}}
  - {name: sq, op: Mul, inputs: [x, x], outputs: [x2]}
  - {name: ls, op: ReduceLogSum, inputs: [x2], outputs: [ls], attrs: {axes: [3], keepdims: 1}}
  - {name: rd, op: Round, inputs: [x], outputs: [xr]}
  - {name: am, op: ArgMax, inputs: [xr], outputs: [am], attrs: {axis: 1, keepdims: 1}}
  - {name: aml, op: ArgMax, inputs: [xr], outputs: [aml], attrs: {axis: 1, keepdims: 0, select_last_index: 1}}
  - {name: an, op: ArgMin, inputs: [x], outputs: [an], attrs: {axis: 3, keepdims: 1}}
  - {name: lrn3, op: LRN, inputs: [x], outputs: [lrn3], attrs: {size: 3}}
  - {name: lrn4, op: LRN, inputs: [x], outputs: [lrn4], attrs: {size: 4, alpha: 0.5, beta: 0.5, bias: 2.0}}
  - {name: cs, op: CumSum, inputs: [x, two], outputs: [cs]}
  - {name: csx, op: CumSum, inputs: [x, minus1], outputs: [csx], attrs: {exclusive: 1, reverse: 1}}
  - {name: ci, op: Cast, inputs: [xr], outputs: [xi], attrs: {to: 7}}
  - {name: csi, op: CumSum, inputs: [xi, one], outputs: [csi]}
)";

}  // namespace

TEST_CASE("emu.reduce: Reduce{Max,Min,Prod,LogSumExp,L1,L2,SumSquare,LogSum}, ArgMax/ArgMin on the device") {
  const std::string path = emutest::write_model("reduce", kReduce);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  TensorMap in = (*cpu)->seeded_inputs(4);
  for (int64_t i = 0; i < in.at("x").numel(); ++i) in.at("x").f32()[i] *= 3.f;  // Round then ties often
  const TensorMap got = emutest::check_on_device(path, co, in, [](const std::string& name) {
    return name == "mx" || name == "mn" || name == "cs" || name == "csx" ? 0.0 : 1e-6;
  });
  int64_t ties_differ = 0;  // select_last_index changed some answers: the inputs have ties
  for (int64_t i = 0; i < got.at("aml").numel(); ++i) ties_differ += got.at("aml").i64()[i] != got.at("am").i64()[i];
  CHECK(ties_differ > 0);
  std::remove(path.c_str());
}
