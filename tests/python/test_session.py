"""fusert.InferenceSession against independent references: ONNX Runtime on the same ONNX files,
PyTorch's own outputs saved at export (tools/torchvision_onnx.py), the C++ path (infer), and
hand-computed values; symbolic dims; explain / profile / stats."""
import os
import subprocess

import numpy as np
import onnxruntime as ort
import pytest

import fusert
from conftest import cached


def rel_l2(a, b):
    return float(np.linalg.norm(a.astype(np.float64) - b) / max(np.linalg.norm(b.astype(np.float64)), 1e-30))


def options(threads=2, fusion="all"):
    o = fusert.SessionOptions()
    o.threads = threads
    o.fusion = fusion
    return o


def ort_session(path, threads=2):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


@pytest.mark.parametrize("fusion", ["none", "all"])
def test_mobilenet_v2_vs_onnxruntime_and_pytorch(fusion):
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    s = fusert.InferenceSession(path, options(fusion=fusion))
    (inp,) = s.get_inputs()
    assert inp.name == "input" and inp.shape == ["batch", 3, 224, 224] and inp.type == "tensor(float)"
    rng = np.random.default_rng(1)
    for batch in (1, 3):  # the symbolic batch: two sizes, one session
        x = rng.standard_normal([batch, 3, 224, 224]).astype(np.float32)
        (y,) = s.run(None, {"input": x})
        (want,) = ort_session(path).run(None, {"input": x})
        assert y.shape == (batch, 1000) and y.dtype == np.float32
        assert rel_l2(y, want) <= 1e-4
    assert s.stats()["shape_cache_misses"] >= 1  # batch 3: an execution plan of its own


def test_mobilenet_v2_matches_pytorch_on_the_photo(root):
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    want = np.load(cached("torchvision-onnx", "mobilenet_v2.torch.npy"))
    from PIL import Image  # the export's preprocessing: resize 256, centre crop 224, ImageNet mean/std
    img = Image.open(os.path.join(root, "models", "data", "coffee.png")).convert("RGB")
    w, h = img.size
    sc = 256 / min(w, h)
    img = img.resize((round(w * sc), round(h * sc)), Image.BILINEAR)
    w, h = img.size
    left, top = (w - 224) // 2, (h - 224) // 2
    a = np.asarray(img.crop((left, top, left + 224, top + 224)), np.float32) / 255.0
    a = (a - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    x = np.ascontiguousarray(a.transpose(2, 0, 1)[None])
    (y,) = fusert.InferenceSession(path, options()).run(None, {"input": x})
    (ref,) = ort_session(path).run(None, {"input": x})
    assert rel_l2(y, ref) <= 1e-4
    assert int(np.argmax(y)) == int(np.argmax(want))  # PyTorch's own top-1 on the photo


def test_transformer_symbolic_batch_and_sequence():
    path = cached("transformer-onnx", "encoder.onnx")
    s = fusert.InferenceSession(path, options())
    assert [i.name for i in s.get_inputs()] == ["ids", "mask"]
    assert s.get_inputs()[0].shape == ["batch", "seq"] and s.get_inputs()[0].dtype == np.int64
    assert s.get_outputs()[0].shape == ["batch", "seq", 128]
    rng = np.random.default_rng(2)
    ref = ort_session(path)
    for batch, seq in ((1, 7), (2, 19)):
        ids = rng.integers(0, 100, [batch, seq]).astype(np.int64)
        mask = np.ones([batch, seq], np.int64)
        mask[:, seq - 2:] = 0
        feed = {"ids": ids, "mask": mask}
        (y,) = s.run(["y"], feed)
        (want,) = ref.run(["y"], feed)
        assert y.shape == (batch, seq, 128)
        assert rel_l2(y, want) <= 1e-4


def test_same_bits_as_the_cpp_path(tmp_path, infer_bin):
    path = cached("onnx-models", "ch_ppocr_mobile_v2.0_cls_infer.onnx")
    x = np.random.default_rng(3).standard_normal([2, 3, 48, 192]).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    name = fusert.InferenceSession(path, options(threads=1)).get_inputs()[0].name
    subprocess.run([infer_bin, "--model", path, "--input", f"{name}={tmp_path / 'x.npy'}", "--threads", "1",
                    "--output", str(tmp_path) + "/"], check=True, capture_output=True)
    s = fusert.InferenceSession(path, options(threads=1))
    out = s.run_dict({name: x})
    for o in s.get_outputs():
        cpp = np.load(tmp_path / (o.name.replace("/", "_") + ".npy"))  # infer writes / as _
        assert cpp.shape == out[o.name].shape
        assert np.array_equal(cpp, out[o.name])


def test_by_hand_yaml_model(tmp_path):
    # y = relu(x) * 2 + 1 on a YAML model: values worked out by hand.
    (tmp_path / "m.yaml").write_text(
        "fusert: 1\nname: tiny\ndims: {batch: {min: 1, max: 8, opt: 1}}\n"
        "inputs:\n  - {name: x, shape: [batch, 4], dtype: f32}\noutputs: [y]\n"
        "initializers:\n  - {name: two, shape: [], value: 2.0}\n  - {name: one, shape: [], value: 1.0}\n"
        "nodes:\n  - {name: r, op: Relu, inputs: [x], outputs: [r]}\n"
        "  - {name: m, op: Mul, inputs: [r, two], outputs: [m]}\n"
        "  - {name: a, op: Add, inputs: [m, one], outputs: [y]}\n")
    s = fusert.InferenceSession(tmp_path / "m.yaml", options())
    x = np.array([[-1, 0, 0.5, 3], [2, -2, 1, -0.25]], np.float32)
    (y,) = s.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.array([[1, 1, 2, 7], [5, 1, 3, 1]], np.float32))


def test_inputs_are_not_modified_and_unaligned_or_strided_inputs_work():
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    s = fusert.InferenceSession(path, options())
    x = np.random.default_rng(4).standard_normal([1, 3, 224, 224]).astype(np.float32)
    keep = x.copy()
    (a,) = s.run(None, {"input": x})
    np.testing.assert_array_equal(x, keep)
    buf = np.zeros(x.size + 1, np.float32)  # 4 bytes off any 64-byte boundary: copied, same answer
    unaligned = buf[1:].reshape(x.shape)
    unaligned[...] = x
    (b,) = s.run(None, {"input": unaligned})
    np.testing.assert_array_equal(a, b)
    big = np.zeros([1, 3, 224, 448], np.float32)
    big[..., ::2] = x  # not C-contiguous: made contiguous, same answer
    (c,) = s.run(None, {"input": big[..., ::2]})
    np.testing.assert_array_equal(a, c)


def test_explain_profile_stats():
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    s = fusert.InferenceSession(path, options())
    assert "group" in s.explain().lower()
    x = np.zeros([1, 3, 224, 224], np.float32)
    steps = s.profile({"input": x}, runs=2)
    assert steps and all(st["ms"] >= 0 and st["kernel"] for st in steps)
    assert sum(st["nodes"] for st in steps) >= 1
    st = s.stats()
    assert st["kernels"] >= 1 and st["nodes"] >= st["kernels"] and st["execution_stages"] == 1


def test_options_and_onnxruntime_spellings():
    o = fusert.SessionOptions()
    assert o.device == "cpu" and o.threads == 0 and o.fusion == "all" and o.shape_cache_size == 16
    o.input_shapes = {"input": [2, 3, 224, 224]}
    o.dim_ranges = {"batch": fusert.DimRange(1, 8, 2)}
    assert o.dim_ranges["batch"].opt == 2
    with pytest.raises(AttributeError):
        o.thread = 2  # a typo is an error, not a silent new attribute
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    s = fusert.InferenceSession(path, sess_options=options(), providers=["CPUExecutionProvider"])
    assert s.get_providers() == ["CPUExecutionProvider"]
    with fusert.InferenceSession(path, options()) as s2:
        assert s2.get_outputs()[0].name == s.get_outputs()[0].name


def test_lite0_demo_matches_pytorch_golden(root):
    # The README's demo: the bundled photo through the model's own preprocessing, top-5 labels
    # and logits as PyTorch gives them (models/golden/efficientnet_lite0.coffee.json).
    import json
    if not os.path.exists(os.path.join(root, ".cache", "weights", "efficientnet_lite0.safetensors")):
        pytest.skip("the real Lite0 weights are missing: make run (or make test) fetches them")
    golden = json.load(open(os.path.join(root, "models", "golden", "efficientnet_lite0.coffee.json")))
    s = fusert.InferenceSession(os.path.join(root, "models", "efficientnet_lite0.yaml"), options())
    x = s.read_image(os.path.join(root, "models", "data", "coffee.png"))
    assert x.shape == (1, 3, 224, 224) and x.dtype == np.float32
    (logits,) = s.run(None, {"input": x})
    top = logits[0].argsort()[::-1][:5]
    labels = s.labels()
    assert [labels[i] for i in top] == [t["label"] for t in golden["top5"]]
    np.testing.assert_allclose(logits[0][top], [t["logit"] for t in golden["top5"]], rtol=1e-4, atol=1e-4)
    with pytest.raises(fusert.Error) as e:
        s.read_image(os.path.join(root, "models", "nope.png"))
    assert "nope.png" in str(e.value)


def test_model_given_as_bytes_as_onnxruntime_takes_it():
    path = cached("torchvision-onnx", "mobilenet_v2.onnx")
    with open(path, "rb") as f:
        model = f.read()
    s = fusert.InferenceSession(model, options())
    x = np.random.default_rng(3).standard_normal([1, 3, 224, 224]).astype(np.float32)
    (y,) = s.run(None, {"input": x})
    (want,) = ort_session(path).run(None, {"input": x})
    assert rel_l2(y, want) <= 1e-4
    with pytest.raises(fusert.Error, match="<model bytes>: not an ONNX model") as e:
        fusert.InferenceSession(b"not an onnx model", options())
    assert e.value.code
