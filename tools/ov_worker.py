#!/usr/bin/env python3
"""An OpenVINO worker process for tools/cpu_bench.py: the other CPU runtime a user would pick.

    python3 tools/ov_worker.py MODEL.onnx --threads T --input NAME=FILE.npy [...]

Speaks the protocol of `bench --serve` (apps/bench/serve.h), as tools/ort_worker.py does.
- After loading it prints one JSON line: {"ready": true, ...} or {"error": ...}.
- Then it answers one command per stdin line with one stdout line:
    run           one synchronous infer; prints its wall-clock ms (time.perf_counter around it)
    output PATH   writes the first output as .npy; prints ok
    stats         prints {"peak_rss_kb": ...} (VmHWM of /proc/self/status)
    quit          exits 0

OpenVINO reads the ONNX file itself (its ONNX frontend).
- Inputs with symbolic dims are reshaped to the given .npy's shape before compiling.
- The CPU plugin is compiled with PERFORMANCE_HINT=LATENCY and INFERENCE_NUM_THREADS=T (0 leaves
  OpenVINO's default, all cores).
- INFERENCE_PRECISION_HINT is f32. On CPUs with AMX or AVX512-BF16, OpenVINO's default is bf16,
  which would compare another precision.

Everything else is OpenVINO's defaults. Imports only numpy and openvino.
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


def load(model_path, threads, inputs):
    import openvino as ov
    core = ov.Core()
    model = core.read_model(model_path)
    feeds = {}
    for spec in inputs:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)
    names = {p.get_any_name() for p in model.inputs}
    if set(feeds) != names:
        raise ValueError(f"inputs given {sorted(feeds)}, the model has {sorted(names)}")
    if any(p.get_partial_shape().is_dynamic for p in model.inputs):
        model.reshape({name: list(x.shape) for name, x in feeds.items()})
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"}
    if threads > 0:
        config["INFERENCE_NUM_THREADS"] = threads
    compiled = core.compile_model(model, "CPU", config)
    return ov, compiled.create_infer_request(), feeds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy")
    a = ap.parse_args()
    try:
        ov, req, feeds = load(a.model, a.threads, a.input)
    except Exception as e:  # noqa: BLE001 - reported to the coordinator, which names the model
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
        return 1
    print(json.dumps({"ready": True, "openvino": ov.get_version()}), flush=True)
    ran = False
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "run":
            t0 = time.perf_counter()
            req.infer(feeds)
            print(f"{(time.perf_counter() - t0) * 1e3:.6f}", flush=True)
            ran = True
        elif line.startswith("output "):
            if not ran:
                req.infer(feeds)
                ran = True
            np.save(line[7:], np.array(req.get_output_tensor(0).data, copy=True))
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
