#!/usr/bin/env python3
"""An ONNX Runtime worker process for tools/cpu_bench.py: the peer a user would pick instead.

    python3 tools/ort_worker.py MODEL.onnx --threads T --input NAME=FILE.npy [...]

Speaks the protocol of `bench --serve` (apps/bench/serve.h) so that the coordinator can interleave
engines run by run: after loading it prints one JSON line {"ready": true, ...} (or {"error": ...}),
then answers one command per stdin line with one stdout line:
    run           one InferenceSession.run; prints its wall-clock ms (time.perf_counter around it)
    output PATH   writes the first output as .npy; prints ok
    stats         prints {"peak_rss_kb": ...} (VmHWM of /proc/self/status: this process image's peak;
                  getrusage's ru_maxrss would carry the forking parent's peak across execve)
    quit          exits 0
Session options: all graph optimisations (ORT_ENABLE_ALL), sequential execution, intra-op threads =
--threads, inter-op threads 1; everything else ONNX Runtime's defaults (a user's first choice).
Imports only numpy and onnxruntime, so that the peak RSS is ONNX Runtime's and not PyTorch's.
"""
import argparse
import json
import sys
import time

import numpy as np


def peak_rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy")
    a = ap.parse_args()
    try:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
        feeds = {}
        for spec in a.input:
            name, _, path = spec.partition("=")
            feeds[name] = np.load(path)
        want = {i.name for i in sess.get_inputs()}
        if set(feeds) != want:
            raise ValueError(f"inputs given {sorted(feeds)}, the model has {sorted(want)}")
    except Exception as e:  # noqa: BLE001 - reported to the coordinator, which names the model
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    print(json.dumps({"ready": True, "onnxruntime": ort.__version__}), flush=True)
    out = None
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "run":
            t0 = time.perf_counter()
            out = sess.run(None, feeds)
            print(f"{(time.perf_counter() - t0) * 1e3:.6f}", flush=True)
        elif line.startswith("output "):
            if out is None:
                out = sess.run(None, feeds)
            np.save(line[7:], out[0])
            print("ok", flush=True)
        elif line == "stats":
            print(json.dumps({"peak_rss_kb": peak_rss_kb()}), flush=True)
        elif line == "quit":
            break
        else:
            print(f"error: unknown command '{line}'", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
