"""Quantised models for tools/ort_cases.py (suite `quant`), expected outputs from ONNX Runtime: QLinearConv
with constant scales (fusert's op QLinearConv: oneDNN's int8 convolution or the reference kernel) in the
variants real models use, a small convolutional network quantised by ONNX Runtime's own quantize_static
(QDQ, per channel: fusert reads each DequantizeLinear -> Conv -> Clip -> QuantizeLinear as a QLinearConv), a
Transformer-style MLP quantised by quantize_dynamic (DynamicQuantizeLinear, MatMulInteger on oneDNN's int8
matmul), and the element ops. Two input sizes per session. The integer outputs must be equal; the float
ones agree to ONNX's tolerances (the same integer arithmetic, the scales multiplied in another order)."""
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static

from ort_cases_dd import _model


def _const(name, v):
    return numpy_helper.from_array(np.asarray(v), name)


def qlinear_conv_case(rng):
    """QLinearConv: 3x3 with padding and a bias, per-channel weight scales, u8 in and out with zero points
    (oneDNN); a depthwise strided one; a 1x1 with s8 activations."""
    c, m = 8, 12
    inits = [_const("sx", np.float32(0.02)), _const("zx", np.uint8(120)), _const("sy", np.float32(0.05)),
             _const("zy", np.uint8(90)), _const("sy8", np.float32(0.08)), _const("zy8", np.int8(-5)),
             _const("w1", rng.integers(-127, 128, (m, c, 3, 3)).astype(np.int8)),
             _const("sw1", rng.uniform(0.002, 0.01, m).astype(np.float32)), _const("zw1", np.zeros(m, np.int8)),
             _const("b1", rng.integers(-3000, 3000, m).astype(np.int32)),
             _const("w2", rng.integers(-127, 128, (m, 1, 3, 3)).astype(np.int8)),
             _const("sw2", np.float32(0.01)), _const("zw2", np.int8(0)),
             _const("w3", rng.integers(-127, 128, (6, m, 1, 1)).astype(np.int8)),
             _const("sw3", rng.uniform(0.002, 0.01, 6).astype(np.float32)), _const("zw3", np.zeros(6, np.int8))]
    nodes = [
        helper.make_node("QLinearConv", ["x", "sx", "zx", "w1", "sw1", "zw1", "sy", "zy", "b1"], ["c1"], pads=[1] * 4),
        helper.make_node("QLinearConv", ["c1", "sy", "zy", "w2", "sw2", "zw2", "sy", "zy"], ["c2"], group=m,
                         strides=[2, 2], pads=[1, 0, 1, 1]),
        helper.make_node("DequantizeLinear", ["c2", "sy", "zy"], ["d2"]),  # to s8 activations
        helper.make_node("QuantizeLinear", ["d2", "sy8", "zy8"], ["q8"]),
        helper.make_node("QLinearConv", ["q8", "sy8", "zy8", "w3", "sw3", "zw3", "sy8", "zy8"], ["y"]),
    ]
    graph = helper.make_graph(nodes, "quant_qlinear_conv",
                              [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, c, "h", "w"])],
                              [helper.make_tensor_value_info("c1", TensorProto.UINT8, None),
                               helper.make_tensor_value_info("y", TensorProto.INT8, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    feeds = [{"x": rng.integers(0, 256, [1, c] + s).astype(np.uint8)} for s in ([9, 11], [16, 7])]
    return ("quant_qlinear_conv", model, feeds)


class _Reader(CalibrationDataReader):
    def __init__(self, feeds):
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def _w(rng, shape, scale=0.3):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def qdq_convnet_case(rng):
    """A float network (Conv + Relu, a 3x3 MaxPool with padding, depthwise Conv + Clip(0, 6), 1x1 Conv
    with a bias, a 1x1 shortcut added back and a Relu: qdq_conv, qdq_maxpool and qdq_add) quantised by
    ONNX Runtime's quantize_static: QDQ, per channel, u8 activations, s8 weights, calibrated on 8
    inputs."""
    inits = {"w1": _w(rng, [16, 3, 3, 3]), "b1": _w(rng, [16], 0.1), "w2": _w(rng, [16, 1, 3, 3]),
             "b2": _w(rng, [16], 0.1), "w3": _w(rng, [8, 16, 1, 1]), "b3": _w(rng, [8], 0.1), "w4": _w(rng, [8, 16, 1, 1]),
             "lo": np.float32(0), "hi": np.float32(6)}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4, strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r0"]),
             helper.make_node("MaxPool", ["r0"], ["r1"], kernel_shape=[3, 3], pads=[1] * 4),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4, group=16),
             helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"]),
             helper.make_node("Conv", ["r1", "w4"], ["c4"], strides=[1, 1]),  # a shortcut: 1x1 on r1
             helper.make_node("Add", ["c3", "c4"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                   [("y", TensorProto.FLOAT)], inits, "quant_qdq_convnet", 13)
    calib = [{"x": rng.standard_normal([1, 3, 16, 16]).astype(np.float32)} for _ in range(8)]
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f32.onnx"), os.path.join(d, "qdq.onnx")
        onnx.save(model, src)
        quantize_static(src, dst, _Reader(calib), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        q = onnx.load(dst)
    feeds = [{"x": rng.standard_normal([1, 3] + s).astype(np.float32)} for s in ([16, 16], [21, 13])]
    return ("quant_qdq_convnet", q, feeds)


def dynamic_mlp_case(rng):
    """MatMul + bias + Relu + MatMul on [batch, seq, 32] quantised by quantize_dynamic (s8 weights):
    DynamicQuantizeLinear, MatMulInteger, Cast, Mul."""
    inits = {"w1": _w(rng, [32, 64]), "b1": _w(rng, [64], 0.1), "w2": _w(rng, [64, 16])}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Add", ["h", "b1"], ["hb"]),
             helper.make_node("Relu", ["hb"], ["r"]), helper.make_node("MatMul", ["r", "w2"], ["y"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "s", 32])],
                   [("y", TensorProto.FLOAT)], inits, "quant_dynamic_mlp", 13)
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "f32.onnx"), os.path.join(d, "dyn.onnx")
        onnx.save(model, src)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
        q = onnx.load(dst)
    feeds = [{"x": rng.standard_normal(s).astype(np.float32)} for s in ([1, 5, 32], [3, 17, 32])]
    return ("quant_dynamic_mlp", q, feeds)


def element_ops_case(rng):
    """QuantizeLinear per axis (s8) and per tensor (u8), DequantizeLinear per axis, DynamicQuantizeLinear."""
    inits = {"s": np.array([0.05, 0.1, 0.2], np.float32), "z": np.array([-3, 0, 7], np.int8),
             "s1": np.float32(0.03), "z1": np.uint8(128)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], axis=1),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"], axis=1),
             helper.make_node("QuantizeLinear", ["x", "s1", "z1"], ["qu"]),
             helper.make_node("DynamicQuantizeLinear", ["x"], ["dq", "ds", "dz"])]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, "w"])],
                   [("q", TensorProto.INT8), ("d", TensorProto.FLOAT), ("qu", TensorProto.UINT8),
                    ("dq", TensorProto.UINT8), ("ds", TensorProto.FLOAT), ("dz", TensorProto.UINT8)], inits,
                   "quant_element_ops", 13)
    feeds = [{"x": (3 * rng.standard_normal(s)).astype(np.float32)} for s in ([2, 3, 7], [1, 3, 40])]
    return ("quant_element_ops", model, feeds)


def qdq_add_ties_case(rng):
    """Residual Adds in QDQ form with power-of-two scale ratios, so that many sums land on .5 exactly, and
    odd output zero points: ONNX Runtime's QLinearAdd adds the zero point before it rounds (fusert's
    QLinearAdd does the same); u8 + u8 -> u8, and u8 + s8 -> Relu -> s8."""
    inits = {"sa": np.float32(2 ** -8), "za": np.uint8(123), "sb": np.float32(2 ** -6), "zb": np.uint8(110),
             "sy": np.float32(2 ** -6), "zy": np.uint8(105), "sc": np.float32(2 ** -7), "zc": np.int8(3),
             "sz": np.float32(2 ** -5), "zz": np.int8(-5)}
    nodes = [helper.make_node("DequantizeLinear", ["a", "sa", "za"], ["da"]),
             helper.make_node("DequantizeLinear", ["b", "sb", "zb"], ["db"]),
             helper.make_node("Add", ["da", "db"], ["s"]),
             helper.make_node("QuantizeLinear", ["s", "sy", "zy"], ["y"]),
             helper.make_node("DequantizeLinear", ["y", "sy", "zy"], ["dy"]),
             helper.make_node("DequantizeLinear", ["c", "sc", "zc"], ["dc"]),
             helper.make_node("Add", ["dy", "dc"], ["t"]), helper.make_node("Relu", ["t"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sz", "zz"], ["z"])]
    shape = ["n", 4, 8, 8]
    model = _model(nodes, [helper.make_tensor_value_info("a", TensorProto.UINT8, shape),
                           helper.make_tensor_value_info("b", TensorProto.UINT8, shape),
                           helper.make_tensor_value_info("c", TensorProto.INT8, shape)],
                   [("y", TensorProto.UINT8), ("z", TensorProto.INT8)], inits, "quant_add_ties", 13)
    feeds = [{"a": rng.integers(0, 256, [n, 4, 8, 8]).astype(np.uint8),
              "b": rng.integers(0, 256, [n, 4, 8, 8]).astype(np.uint8),
              "c": rng.integers(-128, 128, [n, 4, 8, 8]).astype(np.int8)} for n in (1, 2)]
    return ("quant_add_ties", model, feeds)


def quant_cases():
    """(name, model, [feeds per test_data_set]) of the quantised cases."""
    rng = np.random.default_rng(35)
    return [f(rng) for f in (qlinear_conv_case, qdq_convnet_case, dynamic_mlp_case, element_ops_case,
                          qdq_add_ties_case)]
