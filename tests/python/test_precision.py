"""SessionOptions.precision = "bf16" (infer --precision bf16): a Conv and a Gemm by constant weights
computed from bf16-rounded inputs and weights with f32 accumulation, checked against numpy in
float64 on values rounded to bfloat16 by ml_dtypes (round to nearest even, as oneDNN's reorder);
the refusals (another value, the reference kernels, the CUDA device, a CPU without native bf16)."""
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import fusert

RNG = np.random.default_rng(11)
W1 = RNG.standard_normal((32, 16, 3, 3)).astype(np.float32) * 0.2
B1 = RNG.standard_normal(32).astype(np.float32)
W2 = RNG.standard_normal((64, 48)).astype(np.float32) * 0.2
B2 = RNG.standard_normal(48).astype(np.float32)


def model(path):
    """y = Relu(Conv(x [1, 16, 12, 12], W1, B1, pads 1)); z = Gemm(a [4, 64], W2, B2)."""
    inits = [numpy_helper.from_array(v, n) for n, v in (("w1", W1), ("b1", B1), ("w2", W2), ("b2", B2))]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], pads=[1] * 4),
             helper.make_node("Relu", ["c"], ["y"]),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["z"])]
    g = helper.make_graph(nodes, "bf16", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12]),
                                          helper.make_tensor_value_info("a", TensorProto.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def bf16(v):
    return v.astype(ml_dtypes.bfloat16).astype(np.float64)


def reference(x, a, round_bf16):
    """float64 results, the operands of the products rounded to bfloat16 first when round_bf16."""
    r = bf16 if round_bf16 else (lambda v: v.astype(np.float64))
    xp = np.pad(r(x), ((0, 0), (0, 0), (1, 1), (1, 1)))
    cols = np.stack([xp[0, :, i:i + 12, j:j + 12] for i in range(3) for j in range(3)], axis=1)  # [16, 9, 12, 12]
    conv = np.einsum("mcij,cijhw->mhw", r(W1).reshape(32, 16, 3, 3), cols.reshape(16, 3, 3, 12, 12))
    y = np.maximum(conv + B1[:, None, None], 0)[None]
    z = r(a) @ r(W2) + B2
    return y, z


def rel_l2(got, want):
    return float(np.linalg.norm(got - want) / np.linalg.norm(want))


def session(path, precision, **kw):
    o = fusert.SessionOptions()
    o.threads = 2
    o.precision = precision
    for k, v in kw.items():
        setattr(o, k, v)
    return fusert.InferenceSession(path, o)


@pytest.fixture(scope="module")
def onnx_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bf16") / "conv_gemm.onnx")
    model(path)
    return path


def test_bf16_rounds_operands_and_accumulates_in_f32(onnx_path):
    try:
        s = session(onnx_path, "bf16")
    except fusert.Error as e:
        assert "no native bf16" in str(e)
        pytest.skip(f"this CPU runs no bf16: {e}")
    f32 = session(onnx_path, "f32")
    x = RNG.standard_normal((1, 16, 12, 12)).astype(np.float32)
    a = RNG.standard_normal((4, 64)).astype(np.float32)
    y, z = s.run(None, {"x": x, "a": a})
    y32, z32 = f32.run(None, {"x": x, "a": a})
    want_y, want_z = reference(x, a, True)
    exact_y, exact_z = reference(x, a, False)
    # bf16 operands, f32 sums: within f32 rounding of the bf16-rounded reference ...
    assert rel_l2(y, want_y) < 1e-5
    assert rel_l2(z, want_z) < 1e-5
    # ... and visibly away from the f32 result (the rounding happened), which the f32 session gives.
    assert rel_l2(y, exact_y) > 3e-4
    assert rel_l2(z, exact_z) > 3e-4
    assert rel_l2(y32, exact_y) < 1e-5
    assert rel_l2(z32, exact_z) < 1e-5
    details = [step["detail"] for step in s.profile({"x": x, "a": a}, 1) if step["kernel"].startswith("onednn")]
    assert len(details) == 2 and all("bf16 source and weights" in d for d in details), details


def expect_error(path, text, **kw):
    with pytest.raises(fusert.Error) as e:
        session(path, **kw)
    assert text in str(e.value)


def test_precision_refusals(onnx_path):
    expect_error(onnx_path, "expected f32 or bf16, got 'fp16'", precision="fp16")
    expect_error(onnx_path, "the reference kernels are f32 only", precision="bf16", cpu_kernels="reference")
    expect_error(onnx_path, "runs on the CPU backend only", precision="bf16", device="cuda")


def test_bf16_refused_without_native_bf16(onnx_path):
    """oneDNN limited to AVX2 (ONEDNN_MAX_CPU_ISA, read when oneDNN starts: a fresh process)."""
    code = ("import fusert, sys\no = fusert.SessionOptions()\no.precision = 'bf16'\n"
            "try:\n    fusert.InferenceSession(sys.argv[1], o)\nexcept fusert.Error as e:\n    print(e)\n")
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA="AVX2", PYTHONPATH=os.path.dirname(fusert.__path__[0]))
    out = subprocess.run([sys.executable, "-c", code, onnx_path], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "precision bf16: this CPU has no native bf16" in out.stdout, out.stdout + out.stderr
