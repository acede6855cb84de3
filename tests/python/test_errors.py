"""Every bad input is a fusert.Error (or TypeError for a wrong Python type) whose message names
the file, input or output, never a crash: wrong dtype, wrong rank, wrong size, missing and
unknown inputs, unknown output names, a closed session, files that do not load."""
import numpy as np
import pytest

import fusert
from conftest import cached


@pytest.fixture(scope="module")
def sess():
    o = fusert.SessionOptions()
    o.threads = 2
    return fusert.InferenceSession(cached("torchvision-onnx", "mobilenet_v2.onnx"), o)


X = np.zeros([1, 3, 224, 224], np.float32)


def expect(code, *fragments):
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(fusert.Error)
            self.info = self.ctx.__enter__()
            return self

        def __exit__(self, *exc):
            handled = self.ctx.__exit__(*exc)
            e = self.info.value
            assert e.code == code, str(e)
            for f in fragments:
                assert f in str(e), str(e)
            return handled
    return Check()


def test_wrong_dtype(sess):
    with expect("invalid argument", "input 'input'", "float32"):
        sess.run(None, {"input": X.astype(np.float64)})
    with expect("invalid argument", "input 'input'", "float32"):
        sess.run(None, {"input": X.astype(np.int64)})


def test_wrong_rank_and_size(sess):
    with expect("shape mismatch", "'input'", "rank 3"):
        sess.run(None, {"input": X[0]})
    with expect("shape mismatch", "'input'", "224"):
        sess.run(None, {"input": np.zeros([1, 3, 100, 224], np.float32)})


def test_missing_and_unknown_inputs(sess):
    with expect("invalid argument", "missing input 'input'"):
        sess.run(None, {})
    with expect("invalid argument", "no input 'images'", "'input'"):
        sess.run(None, {"images": X})
    with expect("invalid argument", "input 'input' must be a numpy array"):
        sess.run(None, {"input": X.tolist()})
    with pytest.raises(TypeError):
        sess.run(None, [X])


def test_unknown_output_name(sess):
    with expect("invalid argument", "no output 'probs'"):
        sess.run(["probs"], {"input": X})


def test_closed_session():
    s = fusert.InferenceSession(cached("torchvision-onnx", "mobilenet_v2.onnx"))
    s.close()
    s.close()  # twice: still fine
    for call in (lambda: s.run(None, {"input": X}), s.explain, s.stats, lambda: s.profile({"input": X})):
        with expect("invalid argument", "closed"):
            call()


def test_files_that_do_not_load(tmp_path):
    with expect("not found", "nope.onnx"):
        fusert.InferenceSession(tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07garbage")
    with pytest.raises(fusert.Error) as e:
        fusert.InferenceSession(bad)
    assert "bad.onnx" in str(e.value)
    with pytest.raises(TypeError):
        fusert.InferenceSession(cached("torchvision-onnx", "mobilenet_v2.onnx"), options={"threads": 2})


def test_profile_runs_must_be_positive(sess):
    with expect("invalid argument", "runs"):
        sess.profile({"input": X}, runs=0)
