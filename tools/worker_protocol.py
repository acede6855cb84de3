"""The line protocol of `bench --serve` (apps/bench/serve.h) for the Python peer workers of
tools/cpu_bench.py (tools/ort_worker.py, tools/ov_worker.py).

A worker prints one JSON line once loaded: `ready` (a dict, with "ready": true added) or
{"error": ...}. Then it answers one command per stdin line with one stdout line:
    run           one inference; prints its wall-clock ms (time.perf_counter around it)
    output PATH   writes the first output as .npy; prints ok
    stats         prints {"peak_rss_kb": ...} (VmHWM of /proc/self/status: this process image's
                  peak; getrusage's ru_maxrss would carry the forking parent's peak across execve)
    quit          exits 0
Imports only the standard library and numpy, so that the peak RSS stays the engine's.
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


def parse_args(doc):
    """MODEL.onnx --threads T --input NAME=FILE.npy ...: the arguments of every worker."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--threads", type=int, default=0, help="intra-op threads (0: the engine's default)")
    ap.add_argument("--input", action="append", default=[], help="NAME=FILE.npy")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16"],
                    help="inference precision where the engine has a setting for it (OpenVINO)")
    return ap.parse_args()


def load_feeds(specs):
    """{name: array} from NAME=FILE.npy arguments."""
    feeds = {}
    for spec in specs:
        name, _, path = spec.partition("=")
        feeds[name] = np.load(path)
    return feeds


def fail(e):
    """Reports a load error to the coordinator (which names the model); returns the exit code."""
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}), flush=True)
    return 1


def serve(ready, run, first_output):
    """The command loop. `run()` does one inference; `first_output()` returns the first output
    of the last run (running once if none ran yet)."""
    print(json.dumps(dict(ready, ready=True)), flush=True)
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "run":
            t0 = time.perf_counter()
            run()
            print(f"{(time.perf_counter() - t0) * 1e3:.6f}", flush=True)
        elif line.startswith("output "):
            np.save(line[7:], first_output())
            print("ok", flush=True)
        elif line == "stats":
            print(json.dumps({"peak_rss_kb": peak_rss_kb()}), flush=True)
        elif line == "quit":
            break
        else:
            print(f"error: unknown command '{line}'", flush=True)
    return 0
