"""Loops decided at run time, for tools/ort_cases.py (suite `loop`): a trip count that is an input,
a body that computes its condition, more iterations than fusert unrolls, a body with an If decided
at run time, a body reading the outer graph's values; each with ops before and after the Loop (so
fusert plans and fuses both sides), several test_data_sets run in one session (input sizes,
iteration counts, zero iterations); expected outputs from ONNX Runtime."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ort_cases_dd import _model


def _vi(name, t, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


def _const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(value, name))


def trips_input_case(rng):
    """M is a graph input: y carried through Tanh(y W + b) (W, b outer constants, h an outer
    activation), each iteration's row sums scanned; the scan [M, n] then scaled. M = 3, 6 and 1 (zero
    iterations in loop_long and loop_if_body: ONNX Runtime gives a scan of [n] values rank 1 then)."""
    body = helper.make_graph([
        helper.make_node("MatMul", ["y_in", "W"], ["yw"]),
        helper.make_node("Add", ["yw", "h"], ["yb"]),
        helper.make_node("Tanh", ["yb"], ["y_out"]),
        helper.make_node("ReduceSum", ["y_out", "axis1"], ["rowsum"], keepdims=0),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                _vi("y_in", TensorProto.FLOAT, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("y_out", TensorProto.FLOAT, None),
         _vi("rowsum", TensorProto.FLOAT, None)])
    inits = {"W": (0.7 * rng.standard_normal([4, 4])).astype(np.float32),
             "b": (0.1 * rng.standard_normal([4])).astype(np.float32),
             "axis1": np.array([1], np.int64), "two": np.array([2.0], np.float32)}
    nodes = [
        helper.make_node("Relu", ["x"], ["x1"]),
        helper.make_node("Add", ["x1", "b"], ["h"]),
        helper.make_node("Loop", ["m", "", "x1"], ["y", "sums"], body=body),
        helper.make_node("Mul", ["sums", "two"], ["sums2"]),
        helper.make_node("Sigmoid", ["y"], ["ys"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["n", 4]), _vi("m", TensorProto.INT64, [])],
                   [("ys", TensorProto.FLOAT), ("sums2", TensorProto.FLOAT)], inits, "loop_trips_input", 13)
    feeds = [{"x": rng.standard_normal([n, 4]).astype(np.float32), "m": np.array(m, np.int64)}
             for n, m in ((3, 3), (5, 6), (2, 1))]
    return ("loop_trips_input", model, feeds)


def while_case(rng):
    """No trip count: x doubles until max |x| >= 50 (the body computes its condition); the
    iteration number, cast, scanned; after it Relu and Add. Inputs of two shapes."""
    body = helper.make_graph([
        helper.make_node("Mul", ["x_in", "two"], ["x_out"]),
        helper.make_node("Abs", ["x_out"], ["ax"]),
        helper.make_node("ReduceMax", ["ax"], ["mx"], keepdims=0),
        helper.make_node("Less", ["mx", "limit"], ["cond_out"]),
        helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                _vi("x_in", TensorProto.FLOAT, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("x_out", TensorProto.FLOAT, None),
         _vi("fi", TensorProto.FLOAT, None)])
    inits = {"two": np.array(2.0, np.float32), "limit": np.array(50.0, np.float32),
             "one": np.array([1.0], np.float32), "yes": np.array(True)}
    nodes = [
        helper.make_node("Loop", ["", "yes", "x"], ["y", "iters"], body=body),
        helper.make_node("Relu", ["y"], ["yr"]),
        helper.make_node("Add", ["iters", "one"], ["iters1"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["a", "b"])],
                   [("yr", TensorProto.FLOAT), ("iters1", TensorProto.FLOAT)], inits, "loop_while", 13)
    feeds = [{"x": s * rng.standard_normal(shape).astype(np.float32)}
             for s, shape in ((0.01, [2, 3]), (3.0, [4, 5]), (100.0, [2, 3]))]
    return ("loop_while", model, feeds)


def long_loop_case(rng):
    """M = 5000 (more than fusert unrolls) and a condition the body computes: a running sum of
    iteration numbers until it passes the input's sum x 40; the sums scanned, then halved. The
    first condition computed too: an input of zeros runs no iteration (a scan of 0 values)."""
    body = helper.make_graph([
        helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["acc_in", "fi"], ["acc_out"]),
        helper.make_node("Less", ["acc_out", "goal"], ["cond_out"]),
        helper.make_node("Identity", ["acc_out"], ["scan"]),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                _vi("acc_in", TensorProto.FLOAT, [])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", TensorProto.FLOAT, []),
         _vi("scan", TensorProto.FLOAT, [])])
    inits = {"M": np.array(5000, np.int64), "zero": np.array(0.0, np.float32), "forty": np.array(40.0, np.float32),
             "half": np.array(0.5, np.float32)}
    nodes = [
        helper.make_node("Abs", ["x"], ["ax"]),
        helper.make_node("ReduceSum", ["ax"], ["s"], keepdims=0),
        helper.make_node("Mul", ["s", "forty"], ["goal"]),
        helper.make_node("Less", ["zero", "goal"], ["go"]),
        helper.make_node("Loop", ["M", "go", "zero"], ["total", "partial"], body=body),
        helper.make_node("Mul", ["partial", "half"], ["halved"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, [3])],
                   [("total", TensorProto.FLOAT), ("halved", TensorProto.FLOAT), ("partial", TensorProto.FLOAT)],
                   inits, "loop_long", 13)
    feeds = [{"x": np.array(v, np.float32)} for v in ([1.0, -2.0, 0.5], [40.0, 10.0, 30.0], [200.0, 0.0, 10.0],
                                                      [0.0, 0.0, 0.0])]
    return ("loop_long", model, feeds)


def if_in_body_case(rng):
    """A body with an If on a value it computes (the row norm above 1: halve, else add 0.3), and a
    body reading a graph input (the offset); a trip count that is an input."""
    then_g = helper.make_graph([helper.make_node("Mul", ["z", "half"], ["t_out"])], "then", [],
                               [_vi("t_out", TensorProto.FLOAT, None)])
    else_g = helper.make_graph([helper.make_node("Add", ["z", "off"], ["e_out"])], "else", [],
                               [_vi("e_out", TensorProto.FLOAT, None)])
    body = helper.make_graph([
        helper.make_node("Sin", ["z_in"], ["z"]),
        helper.make_node("ReduceL2", ["z"], ["norm"], keepdims=0),
        helper.make_node("Greater", ["norm", "one"], ["big"]),
        helper.make_node("If", ["big"], ["z_out"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                _vi("z_in", TensorProto.FLOAT, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("z_out", TensorProto.FLOAT, None)])
    inits = {"half": np.array(0.5, np.float32), "one": np.array(1.0, np.float32)}
    nodes = [
        helper.make_node("Exp", ["x"], ["ex"]),
        helper.make_node("Loop", ["m", "", "ex"], ["z_final"], body=body),
        helper.make_node("Tanh", ["z_final"], ["y"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["n"]), _vi("m", TensorProto.INT64, []),
                           _vi("off", TensorProto.FLOAT, [1])], [("y", TensorProto.FLOAT)], inits, "loop_if_body", 13)
    feeds = [{"x": rng.standard_normal([n]).astype(np.float32), "m": np.array(m, np.int64),
              "off": np.array([o], np.float32)} for n, m, o in ((4, 5, 0.3), (9, 2, -0.2), (1, 7, 0.1), (3, 0, 0.2))]
    return ("loop_if_body", model, feeds)


def loop_cases():
    """(name, model, [feeds per test_data_set]) of the run-time Loop cases."""
    rng = np.random.default_rng(91)
    return [f(rng) for f in (trips_input_case, while_case, long_loop_case, if_in_body_case)]
