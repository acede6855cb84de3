#!/usr/bin/env python3
"""Quantise an ONNX model to int8 with ONNX Runtime's quantisation tools, then (optionally) compare
fusert's run of the quantised file with ONNX Runtime's: agreement, accuracy and speed.

  quantize.py MODEL.onnx -o OUT.onnx --images DIR_OR_FILES...   static, QDQ: per-channel s8 weights, u8
                                                                 activations calibrated on the images
  quantize.py MODEL.onnx -o OUT.onnx --dynamic                   quantize_dynamic (MatMul/Gemm weights s8,
                                                                 activations quantised per run): Transformers
  ... --compare N [--threads T]                                  N inputs (crops of the images; seeded
                                                                 token ids for a model with int64 inputs):
                                                                 top-1 agreement, relative L2 of the outputs
                                                                 (fusert vs ONNX Runtime on OUT.onnx) and the
                                                                 latency of both, and of both on MODEL.onnx

Images are decoded with Pillow and preprocessed as torchvision's ImageNet models expect (shorter side
resized to 256, centre crop of the input's size, scaled to [0, 1], normalised by --mean / --std, NCHW).
Run in .cache/onnx-venv (tools/setup_onnx_venv.sh: onnxruntime, onnx, Pillow, ml_dtypes). --compare
imports the fusert module from build/python (cmake -DFUSERT_PYTHON=ON, which `make test` configures)
or an installed one (pip install .).
"""
import argparse
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def image_files(paths):
    exts = (".png", ".jpg", ".jpeg", ".bmp", ".webp")
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(os.path.join(p, f) for f in os.listdir(p) if f.lower().endswith(exts))
        elif os.path.isfile(p):
            out.append(p)
        else:
            sys.exit(f"quantize.py: {p}: no such file or directory")
    if not out:
        sys.exit("quantize.py: no images found (.png, .jpg, .jpeg, .bmp, .webp)")
    return out


def preprocess(img, size, mean, std):
    """size: (height, width) of the model's input."""
    from PIL import Image
    oh, ow = size
    w, h = img.size
    s = 256 / 224 * max(oh / h, ow / w)  # the crop covers the input, as Resize(256) + CenterCrop(224)
    img = img.convert("RGB").resize((max(ow, round(w * s)), max(oh, round(h * s))), Image.BILINEAR)
    w, h = img.size
    left, top = (w - ow) // 2, (h - oh) // 2
    a = np.asarray(img.crop((left, top, left + ow, top + oh)), np.float32) / 255
    return ((a - mean) / std).transpose(2, 0, 1)[None].astype(np.float32)


def image_inputs(files, n, size, mean, std, seed):
    """n inputs: each image once, then random crops and flips of them (seeded) until n."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    imgs = []
    for f in files:
        try:
            im = Image.open(f)
            im.load()
        except (OSError, ValueError) as e:
            sys.exit(f"quantize.py: {f}: not an image Pillow can read ({e})")
        imgs.append(im)
    out = [preprocess(im, size, mean, std) for im in imgs[:n]]
    while len(out) < n:
        im = imgs[len(out) % len(imgs)].convert("RGB")
        w, h = im.size
        side = rng.uniform(0.4, 1.0) * min(w, h)
        x0, y0 = rng.uniform(0, w - side), rng.uniform(0, h - side)
        c = im.crop((x0, y0, x0 + side, y0 + side))
        if rng.random() < 0.5:
            c = c.transpose(Image.FLIP_LEFT_RIGHT)
        out.append(preprocess(c, size, mean, std))
    return out


def input_size(i):
    """(height, width) of an NCHW input; 224 for a symbolic one (said once on stderr)."""
    size = tuple(d if isinstance(d, int) and d > 0 else 224 for d in i.shape[2:4])
    if size != tuple(i.shape[2:4]) and not getattr(input_size, "said", False):
        input_size.said = True
        print(f"[quantize] input '{i.name}' {i.shape} has open dims: images are preprocessed to "
              f"{size[0]}x{size[1]}", file=sys.stderr)
    return size


def model_input(path):
    import onnxruntime as ort
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).get_inputs()
    except Exception as e:  # noqa: BLE001 (ONNX Runtime raises its own exception types)
        sys.exit(f"quantize.py: {path}: ONNX Runtime cannot load it: {e}")


def seeded_feeds(inputs, n, seed):
    """n feeds for a model whose inputs are token ids / masks (int64, ids below 16 so that any vocabulary
    takes them) or float tensors; symbolic dims at 1 (batch) and 64 (others)."""
    rng = np.random.default_rng(seed)
    feeds = []
    for _ in range(n):
        f = {}
        for i in inputs:
            shape = [d if isinstance(d, int) else (1 if k == 0 else 64) for k, d in enumerate(i.shape)]
            if "int64" in i.type:
                f[i.name] = (rng.integers(0, 16, shape) if "mask" not in i.name else np.ones(shape)).astype(np.int64)
            else:
                f[i.name] = rng.standard_normal(shape).astype(np.float32)
        feeds.append(f)
    return feeds


def interleaved_latencies(fns, runs=50, blocks=5):
    """Median ms of each fn, timed in interleaved blocks: a shared VM's drift hits all alike. A 1 s
    pause and two untimed runs before each block: ONNX Runtime's pool threads keep spinning a while
    after a run, which slows fusert's next runs in the same process (ResNet-18 int8: 10.2 ms right
    after an ONNX Runtime block, 6.3 alone; with the pause 6.1)."""
    ts = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(blocks):
        for fn, t in zip(fns, ts):
            time.sleep(1.0)  # the other runtime's pool threads stop spinning first
            fn(), fn()  # and this one's wake (untimed)
            for _ in range(max(1, runs // blocks)):
                t0 = time.perf_counter()
                fn()
                t.append(time.perf_counter() - t0)
    return [1000 * float(np.median(t)) for t in ts]


def compare(src, dst, feeds, threads):
    import onnxruntime as ort
    sys.path.insert(0, os.path.join(ROOT, "build", "python"))
    import fusert
    so = ort.SessionOptions()
    so.log_severity_level = 3  # errors only: not ORT's notes on unused initializers of exported models
    so.intra_op_num_threads = threads
    opt = fusert.SessionOptions()
    opt.threads = threads
    ort_q = ort.InferenceSession(dst, so, providers=["CPUExecutionProvider"])
    fu_q = fusert.InferenceSession(dst, opt)
    agree, num, den = 0, 0.0, 0.0
    for k, f in enumerate(feeds):
        a, b = ort_q.run(None, f)[0], fu_q.run(None, f)[0]
        agree += int(a.reshape(a.shape[0], -1).argmax(-1)[0] == b.reshape(b.shape[0], -1).argmax(-1)[0])
        num += float(((a.astype(np.float64) - b) ** 2).sum())
        den += float((a.astype(np.float64) ** 2).sum())
        if (k + 1) % 25 == 0:
            print(f"[quantize] compared {k + 1} of {len(feeds)}", file=sys.stderr)
    classifier = len(ort_q.get_outputs()[0].shape) == 2  # [batch, classes]: top-1 means something
    top1 = (f"top-1 equal on {agree} of {len(feeds)} ({100.0 * agree / len(feeds):.1f}%), " if classifier else "")
    print(f"fusert vs ONNX Runtime on {os.path.basename(dst)}, {len(feeds)} inputs: {top1}relative L2 of the outputs "
          f"{np.sqrt(num / max(den, 1e-30)):.2e}")

    f0 = feeds[0]
    print("[quantize] timing the four (5 interleaved blocks of 10 runs, a 1 s pause before each)", file=sys.stderr)
    ort_f = ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    fu_f = fusert.InferenceSession(src, opt)
    names = ["fusert int8", "ONNX Runtime int8", "fusert f32", "ONNX Runtime f32"]
    ms = interleaved_latencies([lambda: fu_q.run(None, f0), lambda: ort_q.run(None, f0), lambda: fu_f.run(None, f0),
                    lambda: ort_f.run(None, f0)])
    rows = list(zip(names, ms))
    print(f"latency, median of 50 runs in 5 interleaved blocks, {threads} thread(s), batch of the first input:")
    for name, ms in rows:
        print(f"  {name:18s} {ms:8.2f} ms")
    print(f"  fusert int8 / ONNX Runtime int8 = {rows[0][1] / rows[1][1]:.2f}; fusert int8 / fusert f32 = "
          f"{rows[0][1] / rows[2][1]:.2f}")


def run_quantiser(fn):
    import logging
    logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process first: not this tool's user's concern
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the quantisation tools raise many types)
        sys.exit(f"quantize.py: ONNX Runtime's quantisation failed: {type(e).__name__}: {e}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="the float32 ONNX model")
    ap.add_argument("-o", "--output", required=True, help="the quantised model to write")
    ap.add_argument("--images", nargs="+", default=[], help="calibration images (files or directories)")
    ap.add_argument("--dynamic", action="store_true", help="quantize_dynamic (no calibration)")
    ap.add_argument("--calibration", type=int, default=32, help="calibration inputs (default 32)")
    ap.add_argument("--per-tensor", action="store_true", help="per-tensor weight scales (default per channel)")
    ap.add_argument("--activations", choices=["u8", "s8"], default="u8", help="activation type (default u8)")
    ap.add_argument("--mean", type=float, nargs=3, default=[0.485, 0.456, 0.406])
    ap.add_argument("--std", type=float, nargs=3, default=[0.229, 0.224, 0.225])
    ap.add_argument("--compare", type=int, default=0, metavar="N", help="compare fusert with ONNX Runtime on N inputs")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    if a.calibration < 1 or a.compare < 0 or a.threads < 1:
        ap.error("--calibration and --threads must be >= 1, --compare >= 0")
    if any(v == 0 for v in a.std):
        ap.error("--std must not be 0")
    out_dir = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(out_dir):
        ap.error(f"the output's directory {out_dir} does not exist")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
    if not os.path.isfile(a.model):
        sys.exit(f"quantize.py: {a.model}: no such file")
    inputs = model_input(a.model)
    t0 = time.time()
    images = []
    if a.dynamic:
        print(f"[quantize] quantize_dynamic {a.model} (s8 weights)", file=sys.stderr)
        run_quantiser(lambda: quantize_dynamic(a.model, a.output, weight_type=QuantType.QInt8))
    else:
        if not a.images:
            sys.exit("quantize.py: static quantisation needs --images (or use --dynamic)")
        if len(inputs) != 1 or len(inputs[0].shape) != 4 or inputs[0].shape[1] != 3 or "float" not in inputs[0].type:
            sys.exit(f"quantize.py: --images needs one float RGB NCHW input [N, 3, H, W]; {a.model} has "
                     f"{[(i.name, i.shape, i.type) for i in inputs]} (use --dynamic)")
        size = input_size(inputs[0])
        mean, std = np.array(a.mean, np.float32), np.array(a.std, np.float32)
        images = image_files(a.images)
        calib = image_inputs(images, a.calibration, size, mean, std, a.seed)
        name = inputs[0].name

        class Reader(CalibrationDataReader):
            def __init__(self):
                self.it = iter(calib)

            def get_next(self):
                x = next(self.it, None)
                return None if x is None else {name: x}

        print(f"[quantize] quantize_static {a.model}: QDQ, {'per-tensor' if a.per_tensor else 'per-channel'} s8 "
              f"weights, {a.activations} activations, calibrated on {len(calib)} inputs from {len(images)} image(s)",
              file=sys.stderr)
        run_quantiser(lambda: quantize_static(
            a.model, a.output, Reader(), quant_format=QuantFormat.QDQ, per_channel=not a.per_tensor,
            activation_type=QuantType.QUInt8 if a.activations == "u8" else QuantType.QInt8,
            weight_type=QuantType.QInt8))
    print(f"wrote {a.output} ({os.path.getsize(a.output) / 1e6:.1f} MB, from {os.path.getsize(a.model) / 1e6:.1f} MB) "
          f"in {time.time() - t0:.1f} s")
    if a.compare:
        if images:
            xs = image_inputs(images, a.compare, input_size(inputs[0]), np.array(a.mean, np.float32), np.array(a.std, np.float32),
                              a.seed + 1)
            feeds = [{inputs[0].name: x} for x in xs]
        else:
            feeds = seeded_feeds(inputs, a.compare, a.seed + 1)
        compare(a.model, a.output, feeds, a.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
