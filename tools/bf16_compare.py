"""fusert --precision bf16 against float32 on the same ONNX file (README "bf16"): N inputs (an image
classifier: the images given, then seeded crops and flips of them, as tools/quantize.py makes them;
another model: seeded tensors), each run by fusert in f32 and in bf16 and by ONNX Runtime in f32 (the
independent reference; for a fusert YAML model, which ONNX Runtime cannot read, fusert's f32).
Prints top-1 agreement (a classifier's [batch, classes] output), relative L2 of every output
against the reference, and the median latency of each at the same threads.

  PYTHONPATH=build/python .cache/onnx-venv/bin/python tools/bf16_compare.py \\
      .cache/torchvision-onnx/resnet18.onnx --images models/data --count 100 --threads 2
"""
import argparse
import os
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from quantize import image_files, image_inputs, input_size, interleaved_latencies, seeded_feeds  # noqa: E402

try:
    import fusert
except ImportError:
    sys.exit("bf16_compare.py: cannot import fusert: set PYTHONPATH=build/python (after make build) "
             "or pip install the package")

MEAN, STD = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)


def fusert_session(path, precision, threads):
    o = fusert.SessionOptions()
    o.threads = threads
    o.precision = precision
    try:
        return fusert.InferenceSession(path, o)
    except fusert.Error as e:
        sys.exit(f"bf16_compare.py: {path} ({precision}): {e}")


def ort_session(path, threads):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.log_severity_level = 3  # errors only: not ORT's notes on unused initializers of exported models
    so.intra_op_num_threads = threads
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def feeds_for(ref, a):
    inputs = ref.get_inputs()
    image_like = len(inputs) == 1 and len(inputs[0].shape) == 4 and inputs[0].shape[1] == 3 and "float" in inputs[0].type
    if a.images and not image_like:
        sys.exit(f"bf16_compare.py: --images needs one float RGB NCHW input; {a.model} has "
                 f"{[(i.name, i.type, i.shape) for i in inputs]}")
    if a.images:
        xs = image_inputs(image_files(a.images), a.count, input_size(inputs[0]), MEAN, STD, a.seed)
        return [{inputs[0].name: x} for x in xs]
    return seeded_feeds(inputs, a.count, a.seed)


def rel_l2(got, want):
    n = np.linalg.norm(want.astype(np.float64))
    return float(np.linalg.norm(got.astype(np.float64) - want) / (n if n > 0 else 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="a float32 ONNX model")
    ap.add_argument("--images", nargs="+", default=[], help="images (files or directories) for a classifier")
    ap.add_argument("--count", type=int, default=100, help="inputs compared (default 100)")
    ap.add_argument("--threads", type=int, default=2, help="threads of all three (default 2)")
    ap.add_argument("--runs", type=int, default=50, help="timed runs of each, in 5 interleaved blocks (default 50)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not os.path.exists(a.model):
        sys.exit(f"bf16_compare.py: {a.model}: no such file")
    if not os.path.isfile(a.model):
        sys.exit(f"bf16_compare.py: {a.model}: not a file (give the .onnx or .yaml model)")
    if a.count < 1 or a.runs < 1:
        sys.exit("bf16_compare.py: --count and --runs must be at least 1")
    s32, s16 = fusert_session(a.model, "f32", a.threads), fusert_session(a.model, "bf16", a.threads)
    yaml = a.model.endswith((".yaml", ".yml"))
    ref = s32 if yaml else ort_session(a.model, a.threads)
    ref_name = "fusert f32" if yaml else "ONNX Runtime f32"
    feeds = feeds_for(ref, a)
    names = [o.name for o in s32.get_outputs()]
    err32, err16, same16, same32, classified, gaps = [], [], 0, 0, 0, []
    for i, f in enumerate(feeds):
        want = ref.run(None, f)
        got32, got16 = s32.run(names, f), s16.run(names, f)
        err32.append(max(rel_l2(g, w) for g, w in zip(got32, want)))
        err16.append(max(rel_l2(g, w) for g, w in zip(got16, want)))
        if want[0].ndim == 2 and want[0].shape[1] > 1:  # a classifier's [batch, classes]
            classified += 1
            top = want[0].argmax(1)
            same16 += bool((got16[0].argmax(1) == top).all())
            if not (got16[0].argmax(1) == top).all():  # how close the reference's top two were
                srt = np.sort(want[0], axis=1)
                gaps.append(float(((srt[:, -1] - srt[:, -2]) / (srt[:, -1] - srt[:, 0] + 1e-30)).min()))
            same32 += bool((got32[0].argmax(1) == top).all())
        if (i + 1) % 10 == 0 or i + 1 == len(feeds):
            print(f"[bf16_compare] compared {i + 1}/{len(feeds)} inputs", file=sys.stderr)
    f = feeds[0]
    fns = [lambda: s32.run(names, f), lambda: s16.run(names, f)] + ([] if yaml else [lambda: ref.run(None, f)])
    print(f"[bf16_compare] timing {len(fns)} engines: 5 interleaved blocks, a 1 s pause before each", file=sys.stderr)
    t32, t16, *tort = interleaved_latencies(fns, a.runs)
    tort = tort[0] if tort else None
    print(f"{os.path.basename(a.model)}: {len(feeds)} inputs, {a.threads} threads")
    if classified:
        print(f"  top-1 equal to {ref_name}: bf16 {100 * same16 / classified:.0f}%" +
              ("" if yaml else f", fusert f32 {100 * same32 / classified:.0f}%"))
        if gaps:
            print(f"  where bf16's top-1 differs, the reference's top two were apart by at most "
                  f"{100 * max(gaps):.2f}% of its output range")
    print(f"  rel. L2 vs {ref_name} (median / max): bf16 {statistics.median(err16):.1e} / {max(err16):.1e}" +
          ("" if yaml else f", fusert f32 {statistics.median(err32):.1e} / {max(err32):.1e}"))
    print(f"  latency (median of {a.runs}): fusert bf16 {t16:.2f} ms, fusert f32 {t32:.2f} ms "
          f"(f32 / bf16 {t32 / t16:.2f})" + ("" if yaml else f", ONNX Runtime f32 {tort:.2f} ms"))


if __name__ == "__main__":
    main()
