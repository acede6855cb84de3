"""Several Python threads share one session and run at once (run releases the GIL): every
result equals the single-threaded one for its own input, and the session made more than one
execution context (runs in flight together)."""
import threading

import numpy as np

import fusert
from conftest import cached


def test_threads_share_one_session():
    o = fusert.SessionOptions()
    o.threads = 1
    s = fusert.InferenceSession(cached("torchvision-onnx", "mobilenet_v2.onnx"), o)
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal([1, 3, 224, 224]).astype(np.float32) for _ in range(4)]
    want = [s.run(None, {"input": x})[0] for x in xs]
    errors, results = [], {}

    def worker(k):
        try:
            for r in range(3):
                results[(k, r)] = s.run(None, {"input": xs[k]})[0]
        except Exception as e:  # reported below, never lost
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (k, r), y in results.items():
        np.testing.assert_array_equal(y, want[k])
    assert s.stats()["execution_contexts"] >= 2
