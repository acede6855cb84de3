#!/usr/bin/env python3
"""Batched sentence embeddings: fusert against ONNX Runtime on all-MiniLM-L6-v2 with dynamic axes.

    .cache/bench-venv/bin/python tools/text_bench.py [--infer build/infer] [--threads 1,2]
        [--short 1000] [--long 100] [--batch-size 32] [--runs 3] [--out docs/bench/text]

Two generated text sets (deterministic; written to .cache/bench/text/): `short`, sentences of
about 12 tokens, and `long`, texts of over 400 words that the tokenizer truncates at 256 tokens.
Each is embedded in batches of --batch-size texts, sorted by length and padded to each batch's
longest text (sentence-transformers' encode()), by
  fusert   `infer --model models/minilm_l6.yaml --seeded --text-file F --batch-size B --threads T
           --runs R`: end to end in C++ (our WordPiece tokenizer, batching, runs); the first pass
           also plans each new input shape; later passes reuse the plans
  ort      ONNX Runtime (ORT_ENABLE_ALL, intra-op threads T) on the same model exported by
           torch.onnx from the PyTorch module of tools/torch_bench.py (fusert's seeded weights)
           with dynamic axes batch and seq; texts tokenized beforehand by Hugging Face's
           BertTokenizerFast on the model's vocab.txt (untimed), the same batches
For each engine, thread count and set: the first pass and the median of the later passes, in ms,
texts/s and tokens/s. The check: fusert's embeddings of the short set (--output) against ORT's
(relative L2 <= 1e-4). Writes OUT/results.json and OUT/results.md; prints the table.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
CACHE = os.path.join(REPO, ".cache", "bench", "text")

import numpy as np  # noqa: E402


def log(msg):
    print(f"text_bench: {msg}", file=sys.stderr, flush=True)


def make_texts(n_short, n_long):
    rnd = random.Random(1)
    subj = ["The cat", "A young boy", "My neighbour", "The old man", "A small dog", "The teacher", "Our team",
            "The river", "A red car", "The city"]
    verb = ["walks along", "looks at", "runs past", "paints", "waits near", "sings about", "cleans", "builds",
            "reads about", "follows"]
    obj = ["the quiet park", "a wooden bridge", "the morning train", "an empty street", "the tall tower",
           "a green field", "the busy market", "a cold lake", "the new library", "a dark forest"]
    tail = ["today.", "at night.", "in the rain.", "every day.", "with a friend.", "before lunch.", "after school.",
            "in winter.", "on Sunday.", "again."]

    def sentence():
        return f"{rnd.choice(subj)} {rnd.choice(verb)} {rnd.choice(obj)} {rnd.choice(tail)}"

    short = [sentence() for _ in range(n_short)]
    long = [" ".join(sentence() for _ in range(60)) for _ in range(n_long)]
    return {"short": short, "long": long}


def run_fusert(infer, path, threads, batch, runs, output=None):
    cmd = [infer, "--model", os.path.join(REPO, "models", "minilm_l6.yaml"), "--seeded", "--text-file", path,
           "--batch-size", str(batch), "--threads", str(threads), "--runs", str(runs)]
    if output:
        cmd += ["--output", output]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"text_bench: fusert failed: {' '.join(cmd)}\n{p.stderr}")
    first = re.search(r"^embedded (\d+) texts \((\d+) tokens\).*: ([0-9.]+) ms, .*shapes planned (\d+) \(([0-9.]+) ms\)",
                      p.stdout, re.M)
    later = re.search(r"^later passes .*: median ([0-9.]+) ms", p.stdout, re.M)
    return {"texts": int(first.group(1)), "tokens": int(first.group(2)), "first_ms": float(first.group(3)),
            "later_ms": float(later.group(1)) if later else None, "shapes_planned": int(first.group(4)),
            "planning_ms": float(first.group(5))}


def export_dynamic(path):
    import torch
    import torch_bench
    module, desc = torch_bench.build_minilm_l6()
    ids = torch.ones((2, 16), dtype=torch.int64)
    with torch.no_grad():
        torch.onnx.export(module, (ids, ids), path, opset_version=17, input_names=["input_ids", "attention_mask"],
                          output_names=["sentence_embedding"], do_constant_folding=True,
                          dynamic_axes={"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                                        "sentence_embedding": {0: "batch"}})
    return desc


def ort_batches(texts, batch):
    import torch_bench  # noqa: F401  (puts .cache/pylib on the path through _transformers)
    transformers = torch_bench._transformers()
    tok = transformers.BertTokenizerFast(vocab_file=os.path.join(REPO, ".cache", "minilm", "vocab.txt"),
                                         do_lower_case=True)
    enc = tok(texts, truncation=True, max_length=256)["input_ids"]
    order = sorted(range(len(texts)), key=lambda i: -len(enc[i]))
    out = []
    for first in range(0, len(order), batch):
        rows = order[first:first + batch]
        longest = len(enc[rows[0]])
        ids = np.zeros((len(rows), longest), np.int64)
        mask = np.zeros((len(rows), longest), np.int64)
        for k, i in enumerate(rows):
            ids[k, :len(enc[i])] = enc[i]
            mask[k, :len(enc[i])] = 1
        out.append((rows, ids, mask))
    return out, sum(len(e) for e in enc)


def run_ort(onnx_path, batches, n, threads, runs):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(onnx_path, so, providers=["CPUExecutionProvider"])
    emb = np.zeros((n, 384), np.float32)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for rows, ids, mask in batches:
            y = s.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            emb[rows] = y
        times.append((time.perf_counter() - t0) * 1000)
    return {"first_ms": times[0], "later_ms": statistics.median(times[1:]) if len(times) > 1 else None}, emb


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--infer", default=os.path.join(REPO, "build", "infer"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--short", type=int, default=1000)
    ap.add_argument("--long", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "bench", "text"))
    ap.add_argument("--texts-only", action="store_true",
                    help="write the two text sets (.cache/bench/text/{short,long}.txt) and stop (make test does)")
    a = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    sets = make_texts(a.short, a.long)
    paths = {}
    for name, texts in sets.items():
        paths[name] = os.path.join(CACHE, f"{name}.txt")
        with open(paths[name], "w") as f:
            f.write("\n".join(texts) + "\n")
    if a.texts_only:
        log("wrote " + ", ".join(f"{os.path.relpath(p, REPO)} ({len(sets[n])} texts)" for n, p in paths.items()))
        return
    onnx_path = os.path.join(CACHE, "minilm_l6_dynamic.onnx")
    import make_transformer_goldens
    make_transformer_goldens.need_transformers()  # pinned transformers + tokenizers into .cache/pylib
    log("exporting all-MiniLM-L6-v2 (seeded) with dynamic axes batch, seq")
    desc = export_dynamic(onnx_path)
    rows = []
    check = None
    for t in [int(x) for x in a.threads.split(",")]:
        for name, texts in sets.items():
            log(f"{name} ({len(texts)} texts), {t} thread(s)")
            emb_path = os.path.join(CACHE, f"fusert_{name}.npy")
            f = run_fusert(a.infer, paths[name], t, a.batch_size, a.runs, emb_path)
            batches, tokens = ort_batches(texts, a.batch_size)
            o, emb = run_ort(onnx_path, batches, len(texts), t, a.runs)
            if check is None and name == "short":
                ours = np.load(emb_path)
                check = float(np.linalg.norm(ours - emb) / np.linalg.norm(emb))
            for engine, r in (("fusert", f), ("ort", o)):
                ms = r["later_ms"] or r["first_ms"]
                rows.append({"engine": engine, "threads": t, "set": name, "texts": len(texts), "tokens": tokens,
                             "first_ms": r["first_ms"], "later_ms": r["later_ms"],
                             "texts_per_s": 1000 * len(texts) / ms, "tokens_per_s": 1000 * tokens / ms,
                             "shapes_planned": r.get("shapes_planned"), "planning_ms": r.get("planning_ms")})
    lines = ["| engine | threads | set | texts | tokens | first pass ms | later passes ms (median) | texts/s | "
             "tokens/s |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['threads']} | {r['set']} | {r['texts']} | {r['tokens']} | "
                     f"{r['first_ms']:.0f} | {r['later_ms'] or 0:.0f} | {r['texts_per_s']:.1f} | "
                     f"{r['tokens_per_s']:.0f} |")
    lines.append("")
    for t in sorted({r["threads"] for r in rows}):
        by = {(r["engine"], r["set"]): r for r in rows if r["threads"] == t}
        for engine in ("fusert", "ort"):
            s, l = by[(engine, "short")], by[(engine, "long")]
            lines.append(f"- {t} thread(s), {engine}: a short text {s['texts_per_s'] / l['texts_per_s']:.1f}x faster "
                         f"than a 256-token one (tokens {l['tokens'] / l['texts']:.0f} vs "
                         f"{s['tokens'] / s['texts']:.1f} per text); tokens/s short / long "
                         f"{s['tokens_per_s'] / l['tokens_per_s']:.2f}")
        for name in ("short", "long"):
            lines.append(f"- {t} thread(s), {name}: fusert / ORT time "
                         f"{by[('ort', name)]['texts_per_s'] / by[('fusert', name)]['texts_per_s']:.2f}")
    lines.append(f"- check: fusert vs ORT embeddings of the short set, relative L2 {check:.2e} (bound 1e-4)")
    table = "\n".join(lines)
    print(table)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"rows": rows, "check_rel_l2": check, "torch_module": desc, "batch_size": a.batch_size,
                   "runs": a.runs, "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0]
                   .strip(" :\t")}, f, indent=1)
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write(table + "\n")
    return 0 if check is not None and check <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
