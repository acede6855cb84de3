"""The Python package's run overhead (README "Python"): fusert.InferenceSession.run timed in
Python against Session::run timed in C++ in the same process (the module's time_runs, GIL
released), on the same ONNX file, input and threads, in interleaved blocks so that the machine's
drift hits both alike. Prints both medians and the overhead in percent.

  PYTHONPATH=build/python .cache/onnx-venv/bin/python tools/py_overhead.py \\
      .cache/torchvision-onnx/mobilenet_v2.onnx --threads 2
"""
import argparse
import statistics
import sys
import time

import numpy as np

import fusert


def feed_for(sess, batch):
    rng = np.random.default_rng(0)
    feed = {}
    for i in sess.get_inputs():
        shape = [batch if isinstance(d, str) or d is None else d for d in i.shape]
        if i.dtype == np.float32:
            feed[i.name] = rng.standard_normal(shape).astype(np.float32)
        else:
            feed[i.name] = np.ones(shape, i.dtype)
    return feed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    ap.add_argument("--batch", type=int, default=1, help="value of every symbolic dim")
    ap.add_argument("--runs", type=int, default=20, help="runs per block")
    ap.add_argument("--blocks", type=int, default=10, help="interleaved blocks of each")
    a = ap.parse_args()
    o = fusert.SessionOptions()
    o.threads = a.threads
    s = fusert.InferenceSession(a.model, o)
    feed = feed_for(s, a.batch)
    for _ in range(5):
        s.run(None, feed)
    py, cpp = [], []
    for b in range(a.blocks):
        cpp += s._s.time_runs(feed, a.runs)
        for _ in range(a.runs):
            t0 = time.perf_counter()
            s.run(None, feed)
            py.append(1e3 * (time.perf_counter() - t0))
        print(f"block {b + 1}/{a.blocks}", file=sys.stderr)
    mp, mc = statistics.median(py), statistics.median(cpp)
    print(f"{a.model}: threads {a.threads}, {len(py)} runs each; C++ Session::run median {mc:.3f} ms, "
          f"Python run median {mp:.3f} ms, overhead {100 * (mp - mc) / mc:+.1f}%")


if __name__ == "__main__":
    main()
