#!/usr/bin/env python3
"""Runs `infer` and checks a file it wrote (stdlib only; python3 may lack numpy).

  check.py stats OUT.json -- COMMAND...       --stats-json content: keys, types, consistency
  check.py npy OUT.npy EXPECTED.json -- COMMAND...   --output tensor against a reference
  check.py dot OUT.dot graph|plan -- COMMAND...   --dot of tests/cli/data/tiny.yaml: a well-formed digraph
Exit status 0 when the command exits 0 and every check holds; the failures are printed.
"""
import json
import math
import struct
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        print("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
        sys.exit(1)


def check_stats(path, model):
    with open(path) as f:
        s = json.load(f)
    errors = []

    def need(cond, what):
        if not cond:
            errors.append(what)

    keys = ["model", "device", "fusion", "nodes", "kernels", "intermediate_bytes", "peak_activation_bytes",
            "plan_ms", "latency_ms"]
    for k in keys:
        need(k in s, "missing key '%s'" % k)
    if errors:
        return errors
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)
    is_num = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
    need(s["model"] == model, "model is %r, expected %r" % (s["model"], model))
    need(s["device"] == "cpu", "device is %r" % s["device"])
    need(isinstance(s["fusion"], str) and s["fusion"], "fusion is %r" % s["fusion"])
    for k in ["nodes", "kernels", "intermediate_bytes", "peak_activation_bytes"]:
        need(is_int(s[k]) and s[k] > 0, "%s is %r, expected a positive integer" % (k, s[k]))
    need(is_num(s["plan_ms"]) and s["plan_ms"] >= 0, "plan_ms is %r" % s["plan_ms"])
    lat = s["latency_ms"]
    if isinstance(lat, dict):
        for k in ["median", "min", "max"]:
            need(k in lat and is_num(lat[k]) and lat[k] > 0, "latency_ms.%s is %r" % (k, lat.get(k)))
        if not errors:
            need(lat["min"] <= lat["median"] <= lat["max"], "latency min <= median <= max fails: %r" % lat)
        # The cold first run is reported apart from the warm latency.
        need(is_num(s.get("first_run_ms")) and s["first_run_ms"] > 0, "first_run_ms is %r" % s.get("first_run_ms"))
    else:
        need(is_num(lat) and lat > 0, "latency_ms is %r" % lat)
    if not errors and model == "resnet18":
        # 1x3x224x224 f32 input and the 1x64x112x112 stem output are alive together.
        need(s["peak_activation_bytes"] >= (3 * 224 * 224 + 64 * 112 * 112) * 4,
             "peak_activation_bytes %d is below input + stem output" % s["peak_activation_bytes"])
        need(s["kernels"] <= s["nodes"], "more kernels than nodes")
        need(s["intermediate_bytes"] > s["peak_activation_bytes"], "intermediate_bytes not above the peak")
    return errors


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError("bad magic")
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack("<I", data[8:12])[0]
    start = 10 if data[6] == 1 else 12
    header = data[start:start + hlen].decode()
    if "'<f4'" not in header:
        raise ValueError("not <f4: " + header)
    shape = [int(t) for t in header.split("'shape': (")[1].split(")")[0].split(",") if t.strip()]
    n = 1
    for d in shape:
        n *= d
    return shape, list(struct.unpack("<%df" % n, data[start + hlen:start + hlen + 4 * n]))


def check_npy(path, expected_path):
    with open(expected_path) as f:
        want = json.load(f)
    shape, values = read_npy(path)
    errors = []
    if shape != want["shape"]:
        errors.append("shape %r, expected %r" % (shape, want["shape"]))
    for i, (g, w) in enumerate(zip(values, want["values"])):
        if abs(g - w) > 1e-5 * (1 + abs(w)):
            errors.append("value %d: %r, expected %r" % (i, g, w))
    return errors


def check_dot(path, kind):
    """kind 'graph' (--fusion none: graph_to_dot) or 'plan' (fusion groups as clusters)."""
    with open(path) as f:
        text = f.read()
    errors = []
    header = 'digraph "tiny" {' if kind == "graph" else 'digraph "tiny plan" {'
    if not text.startswith(header):
        errors.append("does not start with %r: %r" % (header, text[:40]))
    if text.count("{") != text.count("}") or not text.rstrip().endswith("}"):
        errors.append("unbalanced braces")
    for i, (name, op) in enumerate([("conv", "Conv"), ("relu", "Relu"), ("gap", "GlobalAveragePool"), ("flat", "Flatten")]):
        if '  n%d [label="%s\\n%s"' % (i, name, op) not in text:
            errors.append("no node line for %s" % name)
    edges = [line.split("[")[0].strip().rstrip(";") for line in text.splitlines() if "->" in line]
    if kind == "graph":
        # One edge per data input (weights are not drawn) plus one into the output y.
        want = ['"v:x" -> n0', "n0 -> n1", "n1 -> n2", "n2 -> n3", 'n3 -> "v:y"']
    else:
        want = ["n0 -> n1", "n1 -> n2", "n2 -> n3"]
        if "subgraph cluster_" not in text:
            errors.append("no fusion cluster")
    if edges != want:
        errors.append("edges %r, expected %r" % (edges, want))
    return errors


def main():
    if "--" not in sys.argv:
        print(__doc__)
        return 2
    sep = sys.argv.index("--")
    args, cmd = sys.argv[1:sep], sys.argv[sep + 1:]
    run(cmd)
    if args[0] == "stats":
        model = args[2] if len(args) > 2 else "resnet18"
        errors = check_stats(args[1], model)
    elif args[0] == "dot":
        errors = check_dot(args[1], args[2])
    elif args[0] == "npy":
        errors = check_npy(args[1], args[2])
    else:
        print("unknown check " + args[0])
        return 2
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
