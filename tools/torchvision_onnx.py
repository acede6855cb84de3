#!/usr/bin/env python3
"""torchvision's classification families as PyTorch exports them to ONNX, through fusert's ONNX
import, against ONNX Runtime and against PyTorch itself.

    /usr/bin/python3 tools/torchvision_onnx.py export [--models a,b]      # Debian PyTorch
    .cache/onnx-venv/bin/python tools/torchvision_onnx.py compare --infer build/infer

`export` needs Debian's python3-torch 1.13 and python3-torchvision 0.14 (tools/setup_deps.sh). For
each family it builds the model with seeded weights (torch.manual_seed(0), then torchvision's own
initialisation; a Linear layer initialised to zero, as ViT's head, gets seeded normal weights so
that the logits are not all 0), calibrates the BatchNorm statistics on seeded noise (a cumulative average over
two training-mode passes, so activations are scaled like a trained network's instead of growing
through 50 layers), exports it with torch.onnx.export at opset 17 with a symbolic batch dim
`batch`, and writes .cache/torchvision-onnx/<model>.onnx plus PyTorch's own output on the bundled
photo (models/data/coffee.png: resize 256, centre crop 224, ImageNet mean/std): <model>.torch.npy.
An export is redone only when this script, torch or torchvision changed (a stamp file).

`compare` (needs onnxruntime and numpy: tools/setup_onnx_venv.sh) feeds the same photo to ONNX
Runtime (CPUExecutionProvider, 1 thread) and to `infer --model <model>.onnx --input photo.npy`
with each fusion mode, and checks relative L2 <= 1e-4 against ONNX Runtime and against PyTorch,
and the same argmax. It prints one row per model and fusion mode, with the kernels per inference
(from --stats-json) and fused-vs-unfused error. Where models/ has the family written by hand
(mobilenet_v2, mobilenet_v3_small, resnet18), the import must plan the same number of kernels
with fusion none and all: the exporter's spellings (Clip for ReLU6, Shape/Gather/Concat chains,
Flatten) must not cost a fusion. A reference whose logits are constant (nothing
to compare) is a failure. Exit 1 on any mismatch.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache", "torchvision-onnx")
PHOTO = os.path.join(ROOT, "models", "data", "coffee.png")
BOUND = 1e-4

# name -> (constructor expression in torchvision.models, what it exercises)
FAMILIES = {
    "resnet18": ("resnet18()", "residual Add after Conv+BN+ReLU"),
    "resnext50_32x4d": ("resnext50_32x4d()", "grouped 3x3 convolutions (32 groups)"),
    "mobilenet_v2": ("mobilenet_v2()", "inverted residuals, ReLU6 as Clip"),
    "mobilenet_v3_small": ("mobilenet_v3_small()", "hard-swish, squeeze-excitation gates"),
    "mobilenet_v3_large": ("mobilenet_v3_large()", "hard-swish, SE, 5x5 depthwise"),
    "efficientnet_b0": ("efficientnet_b0()", "SiLU as Sigmoid*x, SE with SiLU"),
    "regnet_y_400mf": ("regnet_y_400mf()", "grouped convolutions with SE"),
    "shufflenet_v2_x0_5": ("shufflenet_v2_x0_5()", "channel shuffle as Reshape/Transpose/Reshape, Split"),
    "squeezenet1_1": ("squeezenet1_1()", "fire modules: Concat of two expand convolutions"),
    "googlenet": ("googlenet(aux_logits=False, init_weights=True)", "inception branches, Concat"),
    "densenet121": ("densenet121()", "dense Concat chains, pre-activation BN"),
    "mnasnet0_5": ("mnasnet0_5()", "depthwise separable blocks"),
    "convnext_tiny": ("convnext_tiny()", "7x7 depthwise, LayerNorm over channels (Transpose), GELU as Erf"),
    "vit_tiny": ("vision_transformer.VisionTransformer(image_size=224, patch_size=16, num_layers=2, num_heads=3, "
                 "hidden_dim=192, mlp_dim=768)", "a small ViT: class token Expand/Concat, attention, GELU as Erf"),
}


def stamp_text():
    import torch
    import torchvision
    with open(os.path.abspath(__file__), "rb") as f:
        src = hashlib.sha256(f.read()).hexdigest()[:16]
    return f"{src} torch {torch.__version__} torchvision {torchvision.__version__}\n"


def photo_nchw():
    import numpy as np
    from PIL import Image
    img = Image.open(PHOTO).convert("RGB")
    w, h = img.size
    s = 256 / min(w, h)
    img = img.resize((max(256, round(w * s)), max(256, round(h * s))), Image.BILINEAR)
    w, h = img.size
    left, top = (w - 224) // 2, (h - 224) // 2
    x = np.asarray(img.crop((left, top, left + 224, top + 224)), dtype=np.float32) / 255.0
    x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return x.transpose(2, 0, 1)[None].copy()


def build(name):
    import torch
    import torchvision
    from torchvision.models import vision_transformer  # noqa: F401  (used by the ViT expression)
    torch.manual_seed(0)
    m = eval("torchvision.models." + FAMILIES[name][0], {"torchvision": torchvision})
    for mod in m.modules():  # ViT's head starts at zero (all logits 0, nothing to compare): seeded instead
        if isinstance(mod, torch.nn.Linear) and not mod.weight.detach().any():
            torch.nn.init.normal_(mod.weight, std=0.02)
    bns = [b for b in m.modules() if isinstance(b, torch.nn.modules.batchnorm._BatchNorm)]
    if bns:  # calibrate BatchNorm on seeded noise: cumulative averages of two training passes
        for b in bns:
            b.momentum = None
            b.reset_running_stats()
        g = torch.Generator().manual_seed(1)
        m.train()
        with torch.no_grad():
            for _ in range(2):
                m(torch.randn(4, 3, 224, 224, generator=g))
    return m.eval()


def export(names):
    import numpy as np
    import torch
    os.makedirs(CACHE, exist_ok=True)
    stamp = stamp_text()
    x = photo_nchw()
    np.save(os.path.join(CACHE, "photo.npy"), x)
    for name in names:
        onnx_path = os.path.join(CACHE, name + ".onnx")
        stamp_path = os.path.join(CACHE, name + ".stamp")
        if os.path.exists(onnx_path) and os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
            print(f"[torchvision] {onnx_path} present")
            continue
        m = build(name)
        with torch.no_grad():
            want = m(torch.from_numpy(x)).numpy()
            torch.onnx.export(m, torch.from_numpy(x), onnx_path + ".part", opset_version=17, input_names=["input"],
                              output_names=["logits"], dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
        os.replace(onnx_path + ".part", onnx_path)
        np.save(os.path.join(CACHE, name + ".torch.npy"), want)
        with open(stamp_path, "w") as f:
            f.write(stamp)
        print(f"[torchvision] {onnx_path} ({os.path.getsize(onnx_path) // 1024} KiB; {FAMILIES[name][1]})", flush=True)


def rel_l2(got, want):
    import numpy as np
    return float(np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want.astype(np.float64)), 1e-30))


def compare(infer, names, fusions):
    import numpy as np
    import onnxruntime as ort
    x = np.load(os.path.join(CACHE, "photo.npy"))
    failed = 0
    print(f"{'model':<19} {'fusion':<10} {'kernels':>7} {'vs ORT':>9} {'vs torch':>9} {'vs none':>9} {'argmax':>6}  status")
    for name in names:
        path = os.path.join(CACHE, name + ".onnx")
        if not os.path.exists(path):
            sys.exit(f"[torchvision] error: {path} missing (run: /usr/bin/python3 tools/torchvision_onnx.py export)")
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        want = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"]).run(None, {"input": x})[0]
        torch_out = np.load(os.path.join(CACHE, name + ".torch.npy"))
        if not np.ptp(want) > 1e-3 * max(float(np.abs(want).max()), 1e-30):  # a constant output proves nothing
            print(f"{name:<19} degenerate reference: ONNX Runtime's logits are (nearly) constant")
            failed += 1
            continue
        yaml = os.path.join(ROOT, "models", name + ".yaml")
        unfused = None
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in.npy")
            np.save(inp, x)
            for fusion in fusions:
                out, stats = os.path.join(tmp, f"out_{fusion}.npy"), os.path.join(tmp, f"stats_{fusion}.json")
                cmd = [infer, "--model", path, "--input", inp, "--fusion", fusion, "--threads", "1", "--runs", "1",
                       "--warmup", "0", "--output", out, "--stats-json", stats]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name:<19} {fusion:<10} infer failed: {r.stderr.strip()[:400]}")
                    failed += 1
                    continue
                got = np.load(out)
                kernels = json.load(open(stats)).get("kernels", -1)
                if fusion == "none":
                    unfused = got
                e_ort, e_torch = rel_l2(got, want), rel_l2(got, torch_out)
                e_none = rel_l2(got, unfused) if unfused is not None and got.shape == unfused.shape else float("nan")
                ok = (got.shape == want.shape and e_ort <= BOUND and e_torch <= BOUND
                      and int(got.argmax()) == int(want.argmax()) and (fusion == "none" or e_none <= BOUND))
                note = ""
                if os.path.exists(yaml) and fusion in ("none", "all"):  # the hand-written model of the family
                    r = subprocess.run([infer, "--model", yaml, "--fusion", fusion, "--threads", "1", "--runs", "1",
                                        "--warmup", "0", "--stats-json", stats], capture_output=True, text=True)
                    want_k = json.load(open(stats)).get("kernels", -1) if r.returncode == 0 else -1
                    note = f" (models/{name}.yaml: {want_k} kernels)"
                    ok = ok and want_k == kernels
                failed += 0 if ok else 1
                print(f"{name:<19} {fusion:<10} {kernels:>7} {e_ort:9.1e} {e_torch:9.1e} {e_none:9.1e} "
                      f"{int(got.argmax()):>6}  {'ok' if ok else 'MISMATCH'}{note}", flush=True)
    print(f"[torchvision] {len(names)} families x {len(fusions)} fusion modes: "
          f"{'all match' if not failed else str(failed) + ' mismatches'} (ONNX Runtime {ort.__version__}; bound rel. L2 "
          f"{BOUND:g} against ONNX Runtime, PyTorch and fusion none, and ONNX Runtime's argmax)")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["export", "compare"])
    ap.add_argument("--models", default=",".join(FAMILIES), help="comma list (default: all %d)" % len(FAMILIES))
    ap.add_argument("--infer", default=os.path.join(ROOT, "build", "infer"))
    ap.add_argument("--fusion", default="none,all,vertical,horizontal,cross,compound")
    a = ap.parse_args()
    names = [n for n in a.models.split(",") if n]
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        ap.error(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(FAMILIES)}")
    if a.command == "export":
        export(names)
        return 0
    return compare(a.infer, names, a.fusion.split(","))


if __name__ == "__main__":
    sys.exit(main())
