// The epilogue and elementwise-program vocabulary every backend shares: what the lowering
// (runtime/lowering/spec.h) decodes from a fusion group once, and what the CPU kernels
// (kernels/cpu/fused_kernels.h) run and the CUDA code generator (kernels/cuda/codegen.h) emits.
// Data only: no kernel here.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace fusert::kern {

/// One elementwise operation of an epilogue, applied in order to the running value v.
enum class EpOp {
  kAddTensor,  ///< v = v + t   (or t + v)
  kSubTensor,  ///< v = v - t   (or t - v when operand_first)
  kMulTensor,  ///< v = v * t
  kDivTensor,  ///< v = v / t   (or t / v when operand_first)
  kPowTensor,  ///< v = pow(v, t) (or pow(t, v) when operand_first)
// One per row of graph/base/unary_ops.def (kRelu, kClip, kSigmoid, kHardSwish, kGelu, ...):
// v = the row's expression of v and the step's parameters a, b.
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) k##Name,
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
};

/// True for the ops that read a tensor operand (Add/Sub/Mul/Div/Pow); the rest are unary.
inline bool is_tensor_op(EpOp op) {
  return op == EpOp::kAddTensor || op == EpOp::kSubTensor || op == EpOp::kMulTensor || op == EpOp::kDivTensor ||
         op == EpOp::kPowTensor;
}

/// How a tensor operand is indexed relative to the output element (logical index).
enum class OperandMode {
  kFull,        ///< same shape as the output, same flat index
  kPerChannel,  ///< conv: index = channel c of [N, C, HW]; gemm: index = column n of [M, N]
  kPerRow,      ///< gemm: index = row m of [M, N]
                ///< (in general flat / (channels * spatial): the image n for conv, the
                ///< flattened row b * M + m for matmul_fused)
  kScalar,      ///< operand[0]
  kStrided,     ///< general numpy broadcast: offset = sum_d idx_d * strides[d] over out_shape
};

struct EpilogueStep {
  EpOp op = EpOp::kIdentity;
  float a = 0.f, b = 0.f;          ///< Clip bounds, HardSigmoid alpha/beta
  const float* operand = nullptr;  ///< tensor ops only; bound per run
  OperandMode mode = OperandMode::kFull;
  std::vector<int64_t> strides;  ///< kStrided: one per output dim (0 = broadcast)
  bool operand_first = false;    ///< t op v instead of v op t (Sub, Div, Pow)
};

/// Reduction applied after the elementwise steps.
enum class EpTail {
  kNone,
  kGlobalAvgPool,  ///< conv only: y is [N, M] = mean over OH*OW of the epilogue result
  kLayerNorm,      ///< gemm only: each output row of N values normalised (ONNX LayerNormalization
                   ///< over the last axis): (v - mean) / sqrt(var + eps) * scale[n] + shift[n]
};

struct Epilogue {
  std::vector<EpilogueStep> steps;
  EpTail tail = EpTail::kNone;
  const float* ln_scale = nullptr;  ///< kLayerNorm: [N]
  const float* ln_shift = nullptr;  ///< kLayerNorm: [N], nullable
  float ln_epsilon = 1e-5f;
  std::vector<EpilogueStep> post;  ///< steps applied after the tail (e.g. Relu after LayerNorm)
  std::vector<int64_t> out_shape;  ///< logical output shape, for kStrided operands
                                   ///< `steps` (and `post` without a tail) index this shape; for
                                   ///< conv it is the pre-pool [N, M, OH, OW]; `post` after
                                   ///< kGlobalAvgPool indexes the pooled [N, M] instead
                                   ///< (kStrided post strides over a 4-D shape: first two used)
};

/// A straight-line program over the elements of one output shape: register 0 is loaded from
/// `inputs[0]` (broadcast per its strides), then each instruction updates a register. Values
/// marked in `stores` are written to their outputs. Runs in one parallel pass, in chunks.
/// Register 0 is loaded from inputs[0] only when no entry of `loads` targets it. An output may
/// alias an input only when that input is read with contiguous strides (in-place update).
struct ElementwiseInstr {
  EpOp op = EpOp::kIdentity;
  int dst = 0;     ///< register written
  int src = 0;     ///< register read as v
  int src2 = -1;   ///< register used as the tensor operand t (binary ops), or -1
  int input = -1;  ///< or: input index used as t (binary ops), -1 if none
  float a = 0.f, b = 0.f;
  bool operand_first = false;
};
struct ElementwiseProgram {
  std::vector<int64_t> out_shape;
  std::vector<std::vector<int64_t>> input_strides;  ///< per input: element strides over out_shape
  int num_registers = 1;
  std::vector<std::pair<int, int>> loads;  ///< (register, input) loaded before the code
  std::vector<ElementwiseInstr> code;
  std::vector<std::pair<int, int>> stores;  ///< (register, output index)
};

/// The row-wise normalisation of a row-norm group: LayerNormalization over the last axis, or
/// Softmax.
enum class RowNorm { kLayerNorm, kSoftmax };

}  // namespace fusert::kern
