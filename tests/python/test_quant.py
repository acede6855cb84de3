"""int8 through the Python API: a numpy uint8 input into a QLinearConv and a uint8 output out, equal to
ONNX Runtime's, and the 8-bit dtypes named in get_inputs / get_outputs."""
import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import fusert


def qlinear_conv_model(path):
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.asarray(v), n) for n, v in (
        ("sx", np.float32(0.02)), ("zx", np.uint8(100)), ("w", rng.integers(-127, 128, (6, 4, 3, 3)).astype(np.int8)),
        ("sw", rng.uniform(0.002, 0.01, 6).astype(np.float32)), ("zw", np.zeros(6, np.int8)),
        ("sy", np.float32(0.05)), ("zy", np.uint8(3)), ("b", rng.integers(-500, 500, 6).astype(np.int32)))]
    node = helper.make_node("QLinearConv", ["x", "sx", "zx", "w", "sw", "zw", "sy", "zy", "b"], ["y"], pads=[1] * 4)
    g = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, "h", "w"])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def test_int8_in_and_out_vs_onnxruntime(tmp_path):
    path = str(tmp_path / "qconv.onnx")
    qlinear_conv_model(path)
    s = fusert.InferenceSession(path)
    assert s.get_inputs()[0].type == "tensor(uint8)"
    assert s.get_outputs()[0].type == "tensor(uint8)"
    ref = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(4)
    for shape in ([1, 4, 7, 9], [1, 4, 12, 5]):  # two sizes, one session
        x = rng.integers(0, 256, shape).astype(np.uint8)
        (y,) = s.run(None, {"x": x})
        assert y.dtype == np.uint8
        np.testing.assert_array_equal(y, ref.run(None, {"x": x})[0])


def qdq_gemm_model(path, trans_b):
    """x (u8) -> DQ -> Gemm(DQ(w s8, per column), DQ(bias i32 at sx * sw)) -> Relu -> Q (u8): the
    classifier head ONNX Runtime's quantize_static writes, which ONNX Runtime runs as its QGemm."""
    rng = np.random.default_rng(5)
    k, n, sx = 37, 19, np.float32(0.011)
    w = rng.integers(-127, 128, (n, k) if trans_b else (k, n)).astype(np.int8)
    sw = rng.uniform(0.002, 0.01, n).astype(np.float32)
    inits = [numpy_helper.from_array(np.asarray(v), name) for name, v in (
        ("sx", sx), ("zx", np.uint8(121)), ("w", w), ("sw", sw), ("zw", np.zeros(n, np.int8)),
        ("b", rng.integers(-4000, 4000, n).astype(np.int32)), ("sb", (sx * sw).astype(np.float32)),
        ("sy", np.float32(0.03)), ("zy", np.uint8(0)))]
    nodes = [helper.make_node("DequantizeLinear", ["x", "sx", "zx"], ["xf"]),
             helper.make_node("DequantizeLinear", ["w", "sw", "zw"], ["wf"], axis=0 if trans_b else 1),
             helper.make_node("DequantizeLinear", ["b", "sb"], ["bf"], axis=0),
             helper.make_node("Gemm", ["xf", "wf", "bf"], ["g"], transB=int(trans_b)),
             helper.make_node("Relu", ["g"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "sy", "zy"], ["y"])]
    g = helper.make_graph(nodes, "qgemm", [helper.make_tensor_value_info("x", TensorProto.UINT8, ["batch", k])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def test_qdq_gemm_vs_onnxruntime_qgemm(tmp_path):
    """fusert reads the pattern as a 1x1 int8 convolution (qdq_gemm); ONNX Runtime as QGemm: the
    same integer arithmetic, so the same bits, B either way round, at two batch sizes."""
    for trans_b in (True, False):
        path = str(tmp_path / f"qgemm_{trans_b}.onnx")
        qdq_gemm_model(path, trans_b)
        s = fusert.InferenceSession(path)
        opts = ort.SessionOptions()
        opts.log_severity_level = 3
        ref = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(6)
        for batch in (1, 5):
            x = rng.integers(0, 256, (batch, 37)).astype(np.uint8)
            (y,) = s.run(None, {"x": x})
            want = ref.run(None, {"x": x})[0]
            assert np.count_nonzero(want) > want.size // 4  # not all clamped to 0
            np.testing.assert_array_equal(y, want)
