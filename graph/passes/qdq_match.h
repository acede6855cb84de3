// Matching helpers of the QDQ rewrites (qdq_conv_rule.cc, qdq_add_rule.cc, qdq_gemm.cc; internal to
// graph/passes): constants read through fixed_data, per-tensor quantisation parameters, the
// DequantizeLinear behind a value, and the op a QuantizeLinear quantises through an optional Relu or
// Clip (the activation then a clamp of the real value before the requantisation).
#pragma once

#include <vector>

#include "graph/ir.h"

namespace fusert::qdq {

/// `v` when its data is bound and the same at every shape (graph_edit.h fixed_data), else nullptr.
const Value* constant(const Graph& g, ValueId v);
/// f32 scales, each finite and non-zero (an infinite or NaN scale makes 0 * inf = NaN, which the
/// integer kernels cannot carry: such a pattern stays as its f32 ops).
bool usable_scales(const Tensor& s);
/// A QuantizeLinear / DequantizeLinear whose scale is one usable f32 constant and whose zero point
/// (if any) is one constant.
bool per_tensor(const Graph& g, const Node& n);
/// The DequantizeLinear producing `v`, or nullptr.
const Node* dq_of(const Graph& g, ValueId v);
/// Relu, or a Clip of constant bounds (min > max: max everywhere, as ONNX says): its bounds into
/// *lo, *hi; false for another op or NaN bounds.
bool activation(const Graph& g, const Node& a, double* lo, double* hi);
/// For the QuantizeLinear `q` (per tensor, with a zero point): the index of the node of `op` it
/// quantises, directly or through an activation (bounds into *lo, *hi; else +-FLT_MAX), each
/// intermediate read only along the way; the matched nodes appended to *erased. -1 otherwise.
int quantised_producer(const Graph& g, int q, OpKind op, double* lo, double* hi, std::vector<int>* erased);
/// The operand types ONNX Runtime fuses a QDQ Conv / Gemm for: x and y of one type, and an int8 x
/// with int8 weights. Elsewhere it runs the f32 ops, and so must we to give its bits.
bool ort_types(DType x, DType w, DType y);
/// Whether ONNX Runtime removes the activation `act` (Relu or Clip) before the QuantizeLinear `q` as
/// redundant, which its fusion of the anchor needs: Relu when y's zero point is the type's lowest
/// value (ReluQuantFusion), Clip when the quantised range [s (qmin - z), s (qmax - z)] lies within
/// [min, max] up to FLT_EPSILON (ClipQuantFusion). Else it runs the f32 ops, and so must we.
bool ort_drops_activation(const Graph& g, const Node& q, const Node& act);
/// quantised_producer for an anchor ONNX Runtime fuses (Conv, Gemm): an activation between it and `q`
/// only where ONNX Runtime drops it (ort_drops_activation), so the clamp is a no-op; -1 otherwise.
int quantised_anchor(const Graph& g, int q, OpKind op, std::vector<int>* erased);
/// The input of the bias DequantizeLinear `dqb` when it is an int32 constant at scale sx * sw[c]
/// (to 1e-6: quantisers round that product their own way), zero point 0; kNoValue otherwise.
ValueId int_bias(const Graph& g, const Node& dqb, float sx, const Tensor& sw);
/// True when no accumulator acc[c] = sum_k (x - zx) * (w[c, k] - zw[c]) + bias[c] can leave int32,
/// whatever the 8-bit x of `dqx` (its zero point a constant): int8 kernels (ONNX Runtime's too)
/// would wrap where the f32 ops the pattern stands for do not. `w` is [m, ...] by output channel,
/// `zw` one value or [m]; `bias` kNoValue or an int32 constant of [m].
bool fits_int32(const Graph& g, const Node& dqx, const Tensor& w, const Tensor& zw, ValueId bias);

}  // namespace fusert::qdq
