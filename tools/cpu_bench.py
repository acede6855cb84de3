#!/usr/bin/env python3
"""`make bench`: fusert (fused and unfused) against ONNX Runtime on the CPU, side by side.

    python3 tools/cpu_bench.py [--bench build/bench] [--models M,M] [--threads 1,all]
                               [--rounds 30] [--warmup 3] [--no-load] [--out docs/bench]

For each model (default: resnet18 resnet50 mobilenet_v2 efficientnet_lite0 bert_base_layer
minilm_l6) the PyTorch reference module is built with fusert's seeded weights
(tools/torch_bench.py builders: torchvision, efficientnet-lite-pytorch, Hugging Face BertLayer /
BertModel, state_dict from golden_util.seed_module), exported to ONNX by torch.onnx (never by
fusert), and fed the same seeded inputs as fusert (written once as .npy and given to every engine).

Engines, each in its own worker process (own peak RSS; loaded once; one run per request):
  fused    `bench --serve models/M.yaml --fusion all`               fusert, every strategy
  unfused  `bench --serve models/M.yaml --fusion none`     the fair baseline: BN folded,
           one primitive per op, so fused/unfused measures fusion alone
  ort      tools/ort_worker.py M.onnx: ONNX Runtime, ORT_ENABLE_ALL, intra-op threads = T, inter 1
Checks, once per model: the first output of ORT vs fusert fused (rel. L2 <= 1e-4: the two engines
compute the same thing), fused vs unfused (<= 1e-5), and ORT vs PyTorch.

Timing: after --warmup runs of each, --rounds rounds; in each round every engine runs once, the
order rotating (A B C, B C A, C A B, ...); each time is the wall clock around one run inside the
worker. Per engine: median and interquartile range; per pair: the ratio of the paired rounds'
times (median and IQR); GFLOP/s = FLOPs (Conv/Gemm/MatMul as 2 x MACs of direct convolution /
GEMM, counted on the ONNX graph) / median time, against the FMA peak `bench --fma-peak` measures
with the same thread count. Thread counts: 1 and all cores. Under load (unless --no-load): the
all-core pass again with one busy process spinning, and each engine's slowdown against its quiet
median.

Writes OUT/results.json, OUT/results.md (the table) and OUT/latency.png; prints the table.
Exit 1 if a check failed or an engine failed. Needs numpy, torch (+ torchvision,
transformers/efficientnet-lite via tools/torch_bench.py), onnx, onnxruntime, matplotlib:
tools/setup_bench.sh installs them (Debian packages + a venv in .cache/bench-venv).
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)

import numpy as np  # noqa: E402

MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_lite0", "bert_base_layer", "minilm_l6"]
ENGINES = ["fused", "unfused", "ort"]
CACHE = os.path.join(REPO, ".cache", "bench")


def log(msg):
    print(f"cpu_bench: {msg}", file=sys.stderr, flush=True)


def rel_l2(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def quartiles(v):
    q = np.percentile(np.asarray(v, np.float64), [25, 50, 75])
    return float(q[0]), float(q[1]), float(q[2])


# ------------------------------------------------------------------------------------------
# Models: PyTorch reference -> ONNX, inputs as .npy, FLOPs
# ------------------------------------------------------------------------------------------

def onnx_flops(path):
    """2 x multiply-adds of every Conv, Gemm and MatMul in the ONNX graph (direct convolution /
    GEMM). Shapes from onnx.shape_inference on the graph after ONNX Runtime's basic (constant-
    folding) optimisation, which resolves the shape arithmetic PyTorch exports around Pad
    (EfficientNet's same-padding). Other ops are not counted."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper, shape_inference
    folded = path[:-len(".onnx")] + ".folded.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    so.optimized_model_filepath = folded
    ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    m = shape_inference.infer_shapes(onnx.load(folded))
    g = m.graph
    shapes = {}
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        shapes[vi.name] = dims
    for init in g.initializer:
        shapes[init.name] = list(numpy_helper.to_array(init).shape)
    flops = 0
    for n in g.node:
        if n.op_type in ("Conv", "Gemm", "MatMul") and (n.output[0] not in shapes or 0 in shapes[n.output[0]]):
            raise ValueError(f"{path}: the shape of {n.op_type} '{n.name}' was not inferred: FLOPs unknown")
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            y = shapes[n.output[0]]
            flops += 2 * int(np.prod(y)) * int(np.prod(w[1:]))  # each output: Cin/g * kh * kw MACs
        elif n.op_type in ("Gemm", "MatMul"):
            a, y = shapes[n.input[0]], shapes[n.output[0]]
            k = a[-1]
            if n.op_type == "Gemm":
                trans_a = next((at.i for at in n.attribute if at.name == "transA"), 0)
                k = a[0] if trans_a else a[-1]
            flops += 2 * int(np.prod(y)) * int(k)
    return flops


def ensure_builder_packages(name):
    """The pinned PyPI packages a builder needs, pip-installed into .cache/pylib when absent
    (the golden scripts' own installers: transformers 4.40.2, efficientnet-lite-pytorch 0.1.0)."""
    if name in ("bert_base_layer", "minilm_l6"):
        import make_transformer_goldens
        make_transformer_goldens.need_transformers()
    elif name == "efficientnet_lite0":
        import make_goldens
        make_goldens.efficientnet_lite0()


def prepare_model(name, opset):
    """Builds the reference module, exports ONNX, writes the inputs; returns a dict."""
    import torch
    import torch_bench
    ensure_builder_packages(name)
    module, desc = torch_bench.BUILDERS[name]()
    module.eval()
    inputs = torch_bench.seeded_inputs(name)
    specs = torch_bench.ZOO[name]
    os.makedirs(CACHE, exist_ok=True)
    onnx_path = os.path.join(CACHE, f"{name}.onnx")
    in_files = []
    for (iname, _, _), t in zip(specs, inputs):
        p = os.path.join(CACHE, f"{name}.{iname}.npy")
        np.save(p, t.numpy())
        in_files.append((iname, p))
    with torch.no_grad():
        ref = torch_bench.first_output(name, module(*inputs)).numpy()
        torch.onnx.export(module, tuple(inputs), onnx_path, opset_version=opset,
                          input_names=[s[0] for s in specs], output_names=["output"],
                          do_constant_folding=True)
    return {"name": name, "onnx": onnx_path, "inputs": in_files, "reference": ref, "torch_module": desc,
            "flops": onnx_flops(onnx_path)}


# ------------------------------------------------------------------------------------------
# Workers
# ------------------------------------------------------------------------------------------

class Worker:
    """One engine in its own process, speaking `bench --serve`'s line protocol."""

    def __init__(self, engine, cmd):
        self.engine = engine
        self.cmd = cmd
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, bufsize=1)
        line = self.p.stdout.readline()
        try:
            self.ready = json.loads(line)
        except json.JSONDecodeError:
            err = self.p.stderr.read()
            raise RuntimeError(f"{engine}: worker failed to start: {line.strip()} {err.strip()[-800:]}")
        if "error" in self.ready:
            raise RuntimeError(f"{engine}: {self.ready['error']}")

    def ask(self, cmd):
        self.p.stdin.write(cmd + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.engine}: worker died on '{cmd}': {self.p.stderr.read().strip()[-800:]}")
        if line.startswith("error") or line.startswith("{\"error"):
            raise RuntimeError(f"{self.engine}: '{cmd}': {line.strip()}")
        return line.strip()

    def run(self):
        return float(self.ask("run"))

    def close(self):
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()


def start_workers(args, m, threads):
    yaml = os.path.join(REPO, "models", m["name"] + ".yaml")
    feeds = [f"{n}={p}" for n, p in m["inputs"]]
    fin = sum((["--input", f] for f in feeds), [])
    cmds = {
        "fused": [args.bench, "--serve", yaml, "--fusion", "all", "--threads", str(threads)] + fin,
        "unfused": [args.bench, "--serve", yaml, "--fusion", "none", "--threads",
                    str(threads)] + fin,
        "ort": [sys.executable, os.path.join(TOOLS, "ort_worker.py"), m["onnx"], "--threads", str(threads)] + fin,
    }
    workers = {}
    try:
        for e in ENGINES:
            workers[e] = Worker(e, cmds[e])
    except Exception:
        for w in workers.values():
            w.close()
        raise
    return workers


def check_outputs(m, workers):
    outs = {}
    for e, w in workers.items():
        p = os.path.join(CACHE, f"{m['name']}.out.{e}.npy")
        w.ask("output " + p)
        outs[e] = np.load(p).reshape(m["reference"].shape)
    c = {"ort_vs_fused": rel_l2(outs["fused"], outs["ort"]),
         "fused_vs_unfused": rel_l2(outs["fused"], outs["unfused"]),
         "ort_vs_torch": rel_l2(outs["ort"], m["reference"]),
         "fused_vs_torch": rel_l2(outs["fused"], m["reference"])}
    c["ok"] = c["ort_vs_fused"] <= 1e-4 and c["fused_vs_unfused"] <= 1e-5
    return c


def time_rounds(workers, rounds, warmup, gap_ms):
    for w in workers.values():
        for _ in range(warmup):
            w.run()
    order = list(workers)
    times = {e: [] for e in order}
    for r in range(rounds):
        k = r % len(order)
        for e in order[k:] + order[:k]:
            time.sleep(gap_ms / 1e3)  # the previous engine's spinning thread pool goes to sleep
            times[e].append(workers[e].run())
    return times


def summarise(times, flops, peak):
    row = {}
    for e, v in times.items():
        q1, med, q3 = quartiles(v)
        row[e] = {"median_ms": med, "q1_ms": q1, "q3_ms": q3, "min_ms": min(v), "times_ms": v,
                  "gflops": flops / med * 1e-6, "peak_fraction": flops / med * 1e-6 / peak}
    for a, b in (("fused", "ort"), ("fused", "unfused"), ("unfused", "ort")):
        q1, med, q3 = quartiles([x / y for x, y in zip(times[a], times[b])])
        row[f"{a}/{b}"] = {"median": med, "q1": q1, "q3": q3}
    return row


def fma_peak(bench, threads):
    r = subprocess.run([bench, "--fma-peak", "--threads", str(threads)], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def machine():
    cpu = platform.processor() or "unknown CPU"
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    isa = "avx512" if "avx512f" in flags else ("avx2" if "avx2" in flags else "none")
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": isa, "os": platform.platform()}


def versions():
    v = {"python": platform.python_version()}
    for mod in ("numpy", "torch", "onnx", "onnxruntime"):
        try:
            v[mod] = __import__(mod).__version__
        except ImportError:
            v[mod] = None
    try:
        v["fusert_commit"] = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True,
                                            text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        if dirty:
            v["fusert_commit"] += "+changes"
    except OSError:
        pass
    return v


# ------------------------------------------------------------------------------------------
# Report
# ------------------------------------------------------------------------------------------

def fmt_ratio(r):
    return f"{r['median']:.2f} ({r['q1']:.2f}-{r['q3']:.2f})"


def table(results):
    lines = []
    for run in results["runs"]:
        head = (f"{run['threads']} thread{'s' if run['threads'] > 1 else ''}"
                f"{', one busy process' if run['under_load'] else ''}: FMA peak "
                f"{run['fma_peak']['gflops']:.0f} GFLOP/s ({run['fma_peak']['isa']})")
        lines.append(f"**{head}**")
        lines.append("")
        lines.append("| model | GFLOP | fused ms | unfused ms | ORT ms | fused/ORT | fused/unfused | "
                     "fused GFLOP/s (% peak) | ORT GFLOP/s (% peak) | peak RSS MB fused / unfused / ORT |")
        lines.append("|---|---|---|---|---|---|---|---|---|---|")
        for name, row in run["models"].items():
            if "error" in row:
                lines.append(f"| {name} | error: {row['error'][:120]} |")
                continue
            f, u, o = row["fused"], row["unfused"], row["ort"]
            rss = " / ".join(f"{row[e]['peak_rss_kb'] / 1024:.0f}" for e in ENGINES)
            lines.append(
                f"| {name} | {row['flops'] / 1e9:.2f} | {f['median_ms']:.2f} ± {(f['q3_ms'] - f['q1_ms']) / 2:.2f} | "
                f"{u['median_ms']:.2f} | {o['median_ms']:.2f} ± {(o['q3_ms'] - o['q1_ms']) / 2:.2f} | "
                f"{fmt_ratio(row['fused/ort'])} | {fmt_ratio(row['fused/unfused'])} | "
                f"{f['gflops']:.0f} ({100 * f['peak_fraction']:.0f}%) | {o['gflops']:.0f} "
                f"({100 * o['peak_fraction']:.0f}%) | {rss} |")
        if run["under_load"]:
            lines.append("")
            lines.append("Slowdown under load (median loaded / median quiet, same thread count): " + "; ".join(
                f"{n} fused {r['slowdown']['fused']:.2f}x, ORT {r['slowdown']['ort']:.2f}x"
                for n, r in run["models"].items() if "slowdown" in r))
        lines.append("")
    lines.append("Times: median ± half the interquartile range over the rounds; ratios: median (interquartile "
                 "range) of the per-round ratios (engines interleaved run by run).")
    return "\n".join(lines)


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    runs = [r for r in results["runs"] if not r["under_load"]]
    fig, axes = plt.subplots(1, len(runs), figsize=(6.5 * len(runs), 4.6), squeeze=False)
    colours = {"fused": "#1f77b4", "unfused": "#9ecae1", "ort": "#ff7f0e"}
    labels = {"fused": "fusert fused", "unfused": "fusert unfused", "ort": "ONNX Runtime"}
    for ax, run in zip(axes[0], runs):
        names = [n for n, r in run["models"].items() if "error" not in r]
        x = np.arange(len(names))
        for i, e in enumerate(ENGINES):
            med = [run["models"][n][e]["median_ms"] for n in names]
            lo = [run["models"][n][e]["median_ms"] - run["models"][n][e]["q1_ms"] for n in names]
            hi = [run["models"][n][e]["q3_ms"] - run["models"][n][e]["median_ms"] for n in names]
            ax.bar(x + (i - 1) * 0.27, med, 0.27, yerr=[lo, hi], color=colours[e], label=labels[e], capsize=2)
        for j, n in enumerate(names):
            r = run["models"][n]["fused/ort"]["median"]
            top = max(run["models"][n][e]["q3_ms"] for e in ENGINES)
            ax.text(j, top * 1.12, f"{r:.2f}x", ha="center", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels(names, rotation=20, fontsize=8)
        ax.set_ylabel("latency per inference, ms (log)")
        ax.set_title(f"{run['threads']} thread{'s' if run['threads'] > 1 else ''} "
                     f"(label: fused / ORT)", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle(f"fusert vs ONNX Runtime {results['versions'].get('onnxruntime')}, batch 1, "
                 f"{results['machine']['cpu']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ------------------------------------------------------------------------------------------

def bench_pass(args, models, threads, peak, under_load, quiet=None):
    run = {"threads": threads, "under_load": under_load, "fma_peak": peak, "models": {}}
    busy = None
    if under_load:
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        for m in models:
            name = m["name"]
            if "error" in m:
                run["models"][name] = {"error": m["error"]}
                continue
            log(f"{name}: {threads} thread(s){' under load' if under_load else ''}: loading")
            t0 = time.time()
            try:
                workers = start_workers(args, m, threads)
            except RuntimeError as e:
                log(f"{name}: {e}")
                run["models"][name] = {"error": str(e)}
                continue
            try:
                row = {"flops": m["flops"], "kernels": {e: workers[e].ready.get("kernels") for e in ENGINES[:2]}}
                if "check" not in m:
                    m["check"] = check_outputs(m, workers)
                    log(f"{name}: rel. L2 ORT vs fused {m['check']['ort_vs_fused']:.2e}, fused vs unfused "
                        f"{m['check']['fused_vs_unfused']:.2e}, ORT vs PyTorch {m['check']['ort_vs_torch']:.2e}")
                times = time_rounds(workers, args.rounds, args.warmup, args.gap_ms)
                row.update(summarise(times, m["flops"], peak["gflops"]))
                for e in ENGINES:
                    row[e]["peak_rss_kb"] = json.loads(workers[e].ask("stats"))["peak_rss_kb"]
                if quiet is not None and name in quiet["models"] and "error" not in quiet["models"][name]:
                    row["slowdown"] = {e: row[e]["median_ms"] / quiet["models"][name][e]["median_ms"]
                                       for e in ENGINES}
            except RuntimeError as e:
                log(f"{name}: {e}")
                row = {"error": str(e)}
            finally:
                for w in workers.values():
                    w.close()
            run["models"][name] = row
            if "error" not in row:
                log(f"{name}: fused {row['fused']['median_ms']:.2f} ms, unfused {row['unfused']['median_ms']:.2f} "
                    f"ms, ORT {row['ort']['median_ms']:.2f} ms ({time.time() - t0:.0f} s)")
    finally:
        if busy:
            busy.kill()
            busy.wait()
    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench"), help="the fusert bench binary")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--threads", default="1,all", help="comma list of thread counts; 'all' = every core")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--gap-ms", type=float, default=50,
                    help="idle time before every run, so that one engine's spinning threads do not slow the next")
    ap.add_argument("--no-load", action="store_true", help="skip the under-load pass")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "bench"))
    args = ap.parse_args()
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"cpu_bench: {args.bench} not found (make build first)")
    names = [n for n in args.models.split(",") if n]
    for n in names:
        if n not in MODELS:
            sys.exit(f"cpu_bench: unknown model '{n}' (known: {', '.join(MODELS)})")
    cores = os.cpu_count() or 1
    thread_counts = sorted({cores if t == "all" else int(t) for t in args.threads.split(",")})
    start = time.time()
    import torch
    torch.set_num_threads(cores)
    models = []
    for n in names:
        log(f"{n}: PyTorch reference -> ONNX")
        try:
            models.append(prepare_model(n, args.opset))
        except Exception as e:  # noqa: BLE001 - one model's builder failing does not stop the rest
            log(f"{n}: {type(e).__name__}: {e}")
            models.append({"name": n, "error": f"reference/export: {type(e).__name__}: {e}"})
    peaks = {t: fma_peak(args.bench, t) for t in thread_counts}
    for t, p in peaks.items():
        log(f"FMA peak, {t} thread(s): {p['gflops']:.1f} GFLOP/s ({p['isa']})")
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine(), "versions": versions(), "rounds": args.rounds, "warmup": args.warmup,
               "runs": [], "checks": {}}
    for t in thread_counts:
        results["runs"].append(bench_pass(args, models, t, peaks[t], False))
    if not args.no_load:
        t = thread_counts[-1]
        results["runs"].append(bench_pass(args, models, t, peaks[t], True, quiet=results["runs"][-1]))
    failed = False
    for m in models:
        results["checks"][m["name"]] = m.get("check", {"error": m.get("error", "not run")})
        if not m.get("check", {}).get("ok", False):
            failed = True
    for run in results["runs"]:
        failed |= any("error" in r for r in run["models"].values())
    results["seconds"] = round(time.time() - start, 1)
    os.makedirs(args.out, exist_ok=True)
    md = table(results)
    checks = "\n".join(
        f"- {n}: rel. L2 ORT vs fusert fused {c['ort_vs_fused']:.1e}, fused vs unfused {c['fused_vs_unfused']:.1e}, "
        f"ORT vs PyTorch {c['ort_vs_torch']:.1e}" if "ort_vs_fused" in c else f"- {n}: {c['error']}"
        for n, c in results["checks"].items())
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(f"{results['machine']['cpu']}, {results['machine']['cores']} cores; {results['date']}; fusert "
                f"{results['versions'].get('fusert_commit')}, ONNX Runtime {results['versions'].get('onnxruntime')}"
                f"; {args.rounds} rounds\n\n{md}\n\nOutput checks (first output, once per model):\n{checks}\n")
    plot(results, os.path.join(args.out, "latency.png"))
    print(md)
    print("\nOutput checks:\n" + checks)
    print(f"\nwrote {args.out}/results.json, results.md, latency.png ({results['seconds']:.0f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
