"""3-D (volumetric) convolution, transposed convolution and pooling for tools/ort_cases.py (suite
`volume`): small NCDHW networks whose attributes ONNX's own cases leave out (groups, dilations,
asymmetric and automatic pads, ceil_mode, count_include_pad, output_padding), with symbolic depth,
height and width and two input sizes per session; expected outputs from ONNX Runtime."""
import numpy as np
from onnx import TensorProto, helper

from ort_cases_dd import _model


def _w(rng, shape, scale=0.4):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def network_case(rng):
    """Conv (pads 1, bias) -> Relu -> MaxPool (2, stride 2) -> grouped, dilated, strided Conv with
    asymmetric pads -> AveragePool (count_include_pad) -> grouped ConvTranspose (stride 2,
    output_padding) -> Sigmoid."""
    inits = {"w1": _w(rng, [6, 4, 3, 3, 3]), "b1": _w(rng, [6], 0.1), "w2": _w(rng, [8, 3, 1, 3, 3]),
             "w3": _w(rng, [8, 2, 2, 2, 2]), "b3": _w(rng, [4], 0.1)}
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2, 2], strides=[2, 2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], group=2, dilations=[2, 1, 1], strides=[1, 2, 1],
                         pads=[0, 1, 2, 1, 0, 0]),
        helper.make_node("AveragePool", ["c2"], ["a2"], kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1],
                         count_include_pad=1),
        helper.make_node("ConvTranspose", ["a2", "w3", "b3"], ["t3"], group=2, strides=[2, 2, 2],
                         output_padding=[1, 0, 1]),
        helper.make_node("Sigmoid", ["t3"], ["y"]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "d", "h", "w"])],
                   [("y", TensorProto.FLOAT)], inits, "volume_network", 13)
    feeds = [{"x": rng.standard_normal([1, 4] + s).astype(np.float32)} for s in ([6, 8, 7], [9, 6, 10])]
    return ("volume_network", model, feeds)


def pool_case(rng):
    """MaxPool with dilations and ceil_mode, AveragePool with ceil_mode without and with
    count_include_pad (a window past the padding), Conv with auto_pad SAME_UPPER and stride 2."""
    inits = {"w": _w(rng, [3, 3, 3, 2, 3])}
    nodes = [
        helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[2, 3, 2], dilations=[2, 1, 1], strides=[1, 2, 2],
                         ceil_mode=1),
        helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 2, 2], strides=[2, 2, 3], ceil_mode=1,
                         pads=[1, 0, 1, 0, 1, 0]),
        helper.make_node("AveragePool", ["x"], ["ai"], kernel_shape=[3, 3, 2], strides=[2, 2, 2], ceil_mode=1,
                         pads=[1, 1, 0, 1, 1, 0], count_include_pad=1),
        helper.make_node("Conv", ["x", "w"], ["c"], auto_pad="SAME_UPPER", strides=[2, 2, 2]),
    ]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, "d", "h", "w"])],
                   [("m", TensorProto.FLOAT), ("a", TensorProto.FLOAT), ("ai", TensorProto.FLOAT),
                    ("c", TensorProto.FLOAT)], inits, "volume_pools", 13)
    feeds = [{"x": rng.standard_normal([2, 3] + s).astype(np.float32)} for s in ([7, 8, 9], [5, 11, 6])]
    return ("volume_pools", model, feeds)


def input_weights_case(rng):
    """Weights fed as inputs (computed at run time: fusert's reference loops, not oneDNN): a grouped,
    dilated Conv with a bias and a ConvTranspose with pads and dilations."""
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], group=2, dilations=[1, 2, 1], pads=[1, 0, 1, 0, 2, 1]),
        helper.make_node("Tanh", ["c"], ["t"]),
        helper.make_node("ConvTranspose", ["t", "wt"], ["y"], strides=[1, 2, 2], pads=[0, 1, 1, 1, 0, 0],
                         dilations=[2, 1, 1]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, "d", "h", "w"]),
              helper.make_tensor_value_info("w", TensorProto.FLOAT, [6, 2, 2, 3, 2]),
              helper.make_tensor_value_info("b", TensorProto.FLOAT, [6]),
              helper.make_tensor_value_info("wt", TensorProto.FLOAT, [6, 3, 2, 2, 3])]
    model = _model(nodes, inputs, [("c", TensorProto.FLOAT), ("y", TensorProto.FLOAT)], {}, "volume_input_weights", 13)
    feeds = [{"x": rng.standard_normal([1, 4] + s).astype(np.float32), "w": _w(rng, [6, 2, 2, 3, 2]),
              "b": _w(rng, [6]), "wt": _w(rng, [6, 3, 2, 2, 3])} for s in ([4, 6, 5], [3, 7, 4])]
    return ("volume_input_weights", model, feeds)


def volume_cases():
    """(name, model, [feeds per test_data_set]) of the 3-D cases."""
    rng = np.random.default_rng(53)
    return [f(rng) for f in (network_case, pool_case, input_weights_case)]
