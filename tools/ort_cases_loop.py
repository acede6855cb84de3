"""Loops decided at run time, for tools/ort_cases.py (suite `loop`): a trip count that is an input,
a body that computes its condition, more iterations than fusert unrolls, a body with an If decided
at run time, a body reading the outer graph's values, nested Loops whose inner body shadows a name of
the outer one, a negative M, a scan of 100 float and int64 values, a Scan (imported as a Loop) with
reversed and moved axes at three sequence lengths, M folded from a symbolic length; each with ops before and after the Loop (so
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


def nested_shadow_case(rng):
    """Loops nested, the inner body's carried input named as one of the outer body's ('b_in',
    shadowing it): the inner loop doubles its own value k times. Outer M an input (the op Loop)."""
    inner = helper.make_graph([
        helper.make_node("Identity", ["c2"], ["c_o2"]),
        helper.make_node("Add", ["b_in", "b_in"], ["b_o2"]),
    ], "inner", [_vi("j", TensorProto.INT64, []), _vi("c2", TensorProto.BOOL, []), _vi("b_in", TensorProto.FLOAT, None)],
        [_vi("c_o2", TensorProto.BOOL, []), _vi("b_o2", TensorProto.FLOAT, None)])
    outer = helper.make_graph([
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Loop", ["k", "", "a_in"], ["a_out"], body=inner),
        helper.make_node("Add", ["b_in", "a_out"], ["b_out"]),
    ], "outer", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                 _vi("a_in", TensorProto.FLOAT, None), _vi("b_in", TensorProto.FLOAT, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("a_out", TensorProto.FLOAT, None), _vi("b_out", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Loop", ["m", "", "x", "x"], ["a", "b"], body=outer)]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, [2]), _vi("m", TensorProto.INT64, []),
                           _vi("k", TensorProto.INT64, [])], [("a", TensorProto.FLOAT), ("b", TensorProto.FLOAT)], {},
                   "loop_nested_shadow", 13)
    feeds = [{"x": rng.standard_normal([2]).astype(np.float32), "m": np.array(m, np.int64), "k": np.array(k, np.int64)}
             for m, k in ((2, 3), (3, 1), (-4, 2))]  # a negative M runs no iteration
    return ("loop_nested_shadow", model, feeds)


def stacked_case(rng):
    """A constant M of 100 with a scan (more than one Concat stacks: the op Loop) and an int64 scan
    computed in the body: a running product of 0.97 and the iteration number + 5."""
    body = helper.make_graph([
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Mul", ["v_in", "decay"], ["v_out"]),
        helper.make_node("Add", ["i", "five"], ["i5"]),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []), _vi("v_in", TensorProto.FLOAT, None)],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("v_out", TensorProto.FLOAT, None), _vi("v_scan", TensorProto.FLOAT, None),
         _vi("i5", TensorProto.INT64, None)])
    body.node.append(helper.make_node("Identity", ["v_out"], ["v_scan"]))
    inits = {"M": np.array(100, np.int64), "decay": np.array(0.97, np.float32), "five": np.array(5, np.int64)}
    nodes = [
        helper.make_node("Sigmoid", ["x"], ["xs"]),
        helper.make_node("Loop", ["M", "", "xs"], ["v", "vs", "is"], body=body),
        helper.make_node("ReduceSum", ["vs", "axes0"], ["total"], keepdims=0),
    ]
    inits["axes0"] = np.array([0], np.int64)
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, [3])],
                   [("v", TensorProto.FLOAT), ("total", TensorProto.FLOAT), ("is", TensorProto.INT64)], inits,
                   "loop_stacked", 13)
    feeds = [{"x": rng.standard_normal([3]).astype(np.float32)} for _ in range(2)]
    return ("loop_stacked", model, feeds)


def scan_case(rng):
    """Scan (opset 16): a running sum state and an RNN-like state tanh(h W + x_t) over two scan
    inputs (one read in reverse, one along axis 1), outputs stacked forward along axis 1 and in
    reverse; sequence lengths 5, 70 and 1, one input's named ('t'), the other's unnamed (the length a
    run takes is the scan inputs' own, checked equal)."""
    body = helper.make_graph([
        helper.make_node("Add", ["s_in", "xt"], ["s_out"]),
        helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
        helper.make_node("Add", ["hw", "ut"], ["hu"]),
        helper.make_node("Tanh", ["hu"], ["h_out"]),
        helper.make_node("Identity", ["h_out"], ["h_scan"]),
        helper.make_node("Mul", ["s_out", "xt"], ["p_scan"]),
    ], "scan_body", [_vi("s_in", TensorProto.FLOAT, [3]), _vi("h_in", TensorProto.FLOAT, [1, 4]),
                     _vi("xt", TensorProto.FLOAT, [3]), _vi("ut", TensorProto.FLOAT, [1, 4])],
        [_vi("s_out", TensorProto.FLOAT, [3]), _vi("h_out", TensorProto.FLOAT, [1, 4]),
         _vi("h_scan", TensorProto.FLOAT, [1, 4]), _vi("p_scan", TensorProto.FLOAT, [3])])
    inits = {"W": (0.5 * rng.standard_normal([4, 4])).astype(np.float32), "s0": np.zeros(3, np.float32),
             "h0": np.zeros([1, 4], np.float32)}
    nodes = [
        helper.make_node("Relu", ["x"], ["xr"]),
        helper.make_node("Scan", ["s0", "h0", "xr", "u"], ["s", "h", "hs", "ps"], body=body, num_scan_inputs=2,
                         scan_input_directions=[1, 0], scan_input_axes=[0, 1], scan_output_axes=[1, 0],
                         scan_output_directions=[0, 1]),
        helper.make_node("Sigmoid", ["hs"], ["hs_sig"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["t", 3]), _vi("u", TensorProto.FLOAT, [1, None, 4])],
                   [("s", TensorProto.FLOAT), ("h", TensorProto.FLOAT), ("hs_sig", TensorProto.FLOAT),
                    ("ps", TensorProto.FLOAT)], inits, "scan_rnn", 16)
    feeds = [{"x": rng.standard_normal([t, 3]).astype(np.float32), "u": rng.standard_normal([1, t, 4]).astype(np.float32)}
             for t in (5, 70, 1)]
    return ("scan_rnn", model, feeds)


def trips_from_shape_case(rng):
    """M folded from the input's symbolic length (Shape, Gather) and a body that computes its
    condition (the op Loop): the rows of x summed in order while the sum stays below 4; lengths 4,
    9 and 2 in one session (M follows the length)."""
    body = helper.make_graph([
        helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
        helper.make_node("ReduceSum", ["row"], ["rs"], keepdims=0),
        helper.make_node("Add", ["acc_in", "rs"], ["acc_out"]),
        helper.make_node("Less", ["acc_out", "four"], ["cond_out"]),
    ], "body", [_vi("i", TensorProto.INT64, []), _vi("cond_in", TensorProto.BOOL, []),
                _vi("acc_in", TensorProto.FLOAT, [])],
        [_vi("cond_out", TensorProto.BOOL, []), _vi("acc_out", TensorProto.FLOAT, []), _vi("rs", TensorProto.FLOAT, [])])
    inits = {"zero_i": np.array(0, np.int64), "zero": np.array(0.0, np.float32), "four": np.array(4.0, np.float32)}
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "zero_i"], ["n"], axis=0),
        helper.make_node("Loop", ["n", "", "zero"], ["total", "sums"], body=body),
        helper.make_node("Abs", ["sums"], ["abs_sums"]),
    ]
    model = _model(nodes, [_vi("x", TensorProto.FLOAT, ["len", 3])],
                   [("total", TensorProto.FLOAT), ("abs_sums", TensorProto.FLOAT)], inits, "loop_trips_from_shape", 13)
    feeds = [{"x": np.abs(rng.standard_normal([n, 3])).astype(np.float32) * sc} for n, sc in ((4, 0.2), (9, 0.1), (2, 2.0))]
    return ("loop_trips_from_shape", model, feeds)


def loop_cases():
    """(name, model, [feeds per test_data_set]) of the run-time Loop cases."""
    rng = np.random.default_rng(91)
    return [f(rng) for f in (trips_input_case, while_case, long_loop_case, if_in_body_case, nested_shadow_case,
                             stacked_case, scan_case, trips_from_shape_case)]
