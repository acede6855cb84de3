// QLinearConv and QLinearMatMul (ONNX's operator form of quantised models) imported as the ops
// fusert has (internal to graph/onnx):
//   QLinearConv(x, sx, zx, w, sw, zw, sy, zy[, B]) -> ConvInteger(x, w, zx, zw) [+ B, in i32] ->
//   QLinearMatMul(a, sa, za, b, sb, zb, sy, zy)    -> MatMulInteger(a, b, za, zb) ->
//     DequantizeLinear(scale sx * sw / sy, per output channel where sw is) -> QuantizeLinear(scale 1, zy)
// so the accumulator is exact and the requantisation is ONNX's: round_half_even(acc * sx * sw / sy) + zy.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/onnx/onnx_expand.h"

namespace fusert::onnx_import {

/// True for a QLinearConv whose weights, scales and zero points are constants (and 2-D): it imports as the op
/// QLinearConv (one kernel: oneDNN's int8 convolution where it has one); else it is expanded.
bool qlinear_conv_direct(const Graph& g, const onnx::NodeProto& np);

/// True for QLinearConv and QLinearMatMul.
bool is_qlinear_op(const std::string& op);

/// The expansion of a QLinearConv or QLinearMatMul node (inputs already in `g`); errors at `loc`
/// (a per-row A scale of QLinearMatMul is unsupported).
Result<Expansion> qlinear(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc);

}  // namespace fusert::onnx_import
