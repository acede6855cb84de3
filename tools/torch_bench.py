#!/usr/bin/env python3
"""PyTorch eager and torch.compile latency of the fusert zoo on CUDA, on fusert's seeded weights.

    python3 tools/torch_bench.py [--models M,M|all] [--runs 200] [--warmup 20]
                                 [--compile-models M,M|all|none] [--compile-timeout 60]
    python3 tools/torch_bench.py --copy-bandwidth         # device-to-device copy, 1 GiB
    python3 tools/torch_bench.py --dry-run                # no GPU: build on CPU, check, list

Every model is built the way the golden scripts build it (tools/make_goldens.py,
tools/make_transformer_goldens.py: torchvision, efficientnet-lite-pytorch, Hugging Face BertLayer /
BertModel, small torch-op modules), its state_dict replaced by golden_util.seed_module (the same
seeded values `infer --seeded` uses), and fed fusert's seeded inputs (f32 inputs
seeded_tensor(name, shape, "input"), integer inputs all ones). A model whose builder needs a
missing package is skipped with the reason printed.

Timing: fp32 with TF32 off (cuBLAS and cuDNN), torch.no_grad(), batch and shapes of the YAML model.
Each run is bracketed by CUDA events (launch and kernels, no host<->device copies: input and
weights stay on the device); `warmup` untimed runs first, then median/min/max of `runs`. The same
input is reused every run, as `infer --runs` does. torch.compile uses mode "default" (no CUDA
Graphs); its first call (the compilation) runs under an alarm of --compile-timeout seconds and a
timeout or error is reported, not raised.

Output: one JSON object per line on stdout (progress and reasons go to stderr):
  {"model", "status": ok|skipped|error, "reason", "eager_ms", "eager_min_ms", "eager_max_ms",
   "compile_ms", "compile_min_ms", "compile_max_ms", "compile_status", "compile_s",
   "compile_rel_l2", "weight_bytes", "io_bytes", "runs", "warmup", "device", "torch", "reference"}
  {"copy_bandwidth": ..., "bytes", "median_ms", "gbps_rw", "gbps_one_way"}  (--copy-bandwidth)
gbps_rw counts bytes read plus bytes written (2 x buffer / time), the ceiling to compare
(weights + intermediates + inputs/outputs) bytes per latency with.

--dry-run (works without a GPU, with /usr/bin/python3 and torch 1.13 CPU): builds every model on
the CPU, checks that the seeded state_dict loads (strict), runs one forward, and, where an `infer`
binary is found (--infer, else build-gpu/bin/infer, build/infer, build-lead/infer), checks the
weight names, shapes and init kinds against `infer --dump` and the first output against
`infer --seeded --output` (relative L2 <= 1e-4); then prints what it would time. Exit 1 if a
check failed. Needs only the standard library, numpy and torch (+ the builders' packages).
"""
import argparse
import importlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from golden_util import init_for, seed_module  # noqa: E402
from seeded_init import seeded_tensor  # noqa: E402

# The zoo in the order run.sh reports it, with each model's graph inputs as the YAML heads declare
# them (name, shape, dtype); `--dry-run` checks these against `infer --dump`.
ZOO = {
    "resnet18": [("input", [1, 3, 224, 224], "f32")],
    "resnet50": [("input", [1, 3, 224, 224], "f32")],
    "mobilenet_v2": [("input", [1, 3, 224, 224], "f32")],
    "efficientnet_lite0": [("input", [1, 3, 224, 224], "f32")],
    "bert_base_layer": [("hidden_states", [1, 128, 768], "f32"), ("attention_mask", [1, 128], "f32")],
    "minilm_l6": [("input_ids", [1, 256], "i64"), ("attention_mask", [1, 256], "i64")],
    "transformer_block": [("x", [2, 64, 256], "f32"), ("attention_bias", [2, 1, 1, 64], "f32")],
    "multitask_heads": [("input", [8, 256], "f32")],
    "branch_merge": [("input", [1, 32, 28, 28], "f32")],
}
# torch.compile is slow (tens of seconds per model on a cold cache): by default only these.
DEFAULT_COMPILE = ["resnet18", "mobilenet_v2", "transformer_block", "bert_base_layer"]
F32_MIN = float(torch.finfo(torch.float32).min)
DEVICE = "cuda"  # a module variable so that a test can run the timing code elsewhere


class Skip(Exception):
    """The model cannot be built here (a missing package); the message says why."""


def log(msg):
    print(f"torch_bench: {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------
# Builders: each returns (module in eval mode with seeded weights, description)
# ------------------------------------------------------------------------------------------

_PYLIB_DIRS = []  # where efficientnet_lite_pytorch may live (set from --pylib in main)


def _make_goldens():
    try:
        importlib.import_module("torchvision")
    except ImportError as e:
        raise Skip(f"torchvision is not installed ({e})")
    import make_goldens
    return make_goldens


def _make_transformer_goldens():
    import make_transformer_goldens
    return make_transformer_goldens


def _transformers():
    """The installed transformers, else the pinned copy make_transformer_goldens keeps in
    .cache/pylib (only if already there: nothing is installed from here)."""
    try:
        import transformers
        return transformers
    except ImportError:
        pass
    mtg = _make_transformer_goldens()
    if all(os.path.isdir(os.path.join(mtg.PYLIB, m)) for m in mtg.PYLIB_PKGS):
        return mtg.need_transformers()
    raise Skip("transformers is not installed (nor in .cache/pylib: run "
               "tools/make_transformer_goldens.py once where pip works)")


def _bert_config(transformers, **kw):
    try:
        config = transformers.BertConfig(attn_implementation="eager", **kw)
    except TypeError:
        config = transformers.BertConfig(**kw)
    try:
        config._attn_implementation = "eager"  # as the goldens: explicit softmax(QK^T) V
    except AttributeError:  # a transformers without the setter: the constructor's keyword did it
        pass
    return config


def _torchvision(name):
    _make_goldens()  # Skip without torchvision
    import torchvision
    model = seed_module(getattr(torchvision.models, name)(weights=None))
    return model, f"torchvision {torchvision.__version__} models.{name}(weights=None)"


def build_resnet18():
    return _torchvision("resnet18")


def build_resnet50():
    return _torchvision("resnet50")


def build_mobilenet_v2():
    return _torchvision("mobilenet_v2")


def build_efficientnet_lite0():
    mg = _make_goldens()
    for d in _PYLIB_DIRS + [mg.PYLIB]:
        if os.path.isdir(os.path.join(d, "efficientnet_lite_pytorch")):
            mg.PYLIB = d  # make_goldens.efficientnet_lite0() pip-installs only when it is absent
            break
    else:
        raise Skip("efficientnet_lite_pytorch not found in " + ", ".join(_PYLIB_DIRS + [mg.PYLIB])
                   + " (tests/gpu/prepare.sh copies it into build-gpu/pylib; pass --pylib)")
    model = seed_module(mg.efficientnet_lite0())
    return model, f"efficientnet-lite-pytorch 0.1.0 from {mg.PYLIB}, from_name('efficientnet-lite0')"


class _BertLayerWithMask(nn.Module):
    """BertLayer fed hidden_states and the 1/0 mask, extended as BertModel does (the YAML too)."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, hidden_states, attention_mask):
        extended = (1.0 - attention_mask[:, None, None, :]) * F32_MIN
        out = self.layer(hidden_states, attention_mask=extended)
        return out[0] if isinstance(out, (tuple, list)) else out


def build_bert_base_layer():
    transformers = _transformers()
    from transformers.models.bert.modeling_bert import BertLayer
    config = _bert_config(transformers, hidden_size=768, num_attention_heads=12,
                          intermediate_size=3072, hidden_act="gelu", layer_norm_eps=1e-12)
    layer = seed_module(BertLayer(config))  # seeded under BertLayer's own state_dict names
    return _BertLayerWithMask(layer).eval(), (
        f"transformers {transformers.__version__} BertLayer (hidden 768, 12 heads, FFN 3072, eager "
        "attention) + extended mask (1 - m) * f32_min")


class _SentenceEmbedding(nn.Module):
    """sentence-transformers all-MiniLM-L6-v2: BertModel, mask-aware mean pooling, L2 norm."""

    def __init__(self, bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return F.normalize(mean, p=2, dim=1)


def build_minilm_l6():
    transformers = _transformers()
    # all-MiniLM-L6-v2's config.json (models/minilm_l6.yaml's description); the real weights are
    # not used here: fusert runs it with --seeded.
    config = _bert_config(transformers, vocab_size=30522, hidden_size=384, num_hidden_layers=6,
                          num_attention_heads=12, intermediate_size=1536, hidden_act="gelu",
                          layer_norm_eps=1e-12, max_position_embeddings=512, type_vocab_size=2)
    bert = transformers.BertModel(config, add_pooling_layer=False)
    sd_names = [k for k, v in bert.state_dict().items() if not v.is_floating_point()]
    if sd_names:  # an integer buffer (position_ids) saved by this transformers version
        raise Skip(f"BertModel's state_dict holds integer buffers {sd_names}: seed_module cannot seed it")
    bert = seed_module(bert)
    return _SentenceEmbedding(bert).eval(), (
        f"transformers {transformers.__version__} BertModel (6 layers, hidden 384, eager attention, "
        "no pooler) + masked mean pooling + L2 normalisation")


def build_transformer_block():
    return seed_module(_make_transformer_goldens().BlockModel()), \
        "make_transformer_goldens.BlockModel (pre-LN, hidden 256, 4 heads, FFN 1024)"


def build_multitask_heads():
    return seed_module(_make_transformer_goldens().MultiTask()), \
        "make_transformer_goldens.MultiTask (trunk + 4 heads, outputs stacked [4, 8, 64])"


class BranchMerge(nn.Module):
    """models/branch_merge.yaml (no golden script builds it): relu(relu(conv1 x) + relu(conv2 x))."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 32, 1)

    def forward(self, x):
        return torch.relu(torch.relu(self.conv1(x)) + torch.relu(self.conv2(x)))


def build_branch_merge():
    return seed_module(BranchMerge()), "torch ops: relu(relu(conv3x3(x)) + relu(conv1x1(x))), 32 channels"


BUILDERS = {name: globals()["build_" + name] for name in ZOO}


def seeded_inputs(model):
    """fusert's Session::seeded_inputs: f32 -> seeded_tensor(name, shape, "input"); ints -> ones."""
    out = []
    for name, shape, dtype in ZOO[model]:
        if dtype == "f32":
            out.append(torch.from_numpy(seeded_tensor(name, shape, "input")))
        else:
            out.append(torch.ones(shape, dtype=torch.int64))
    return out


def first_output(model, y):
    """The first graph output of the YAML model (what `infer --output` writes)."""
    if model == "multitask_heads":
        return y[0]  # heads.0.out of the stacked [4, 8, 64]
    return y


def nbytes(tensors):
    return int(sum(t.numel() * t.element_size() for t in tensors))


# ------------------------------------------------------------------------------------------
# Checks against fusert's own `infer` (dry run)
# ------------------------------------------------------------------------------------------

def find_infer(path):
    if path:
        return path if os.path.isfile(path) else None
    for p in ("build-gpu/bin/infer", "build/infer", "build-lead/infer"):
        p = os.path.join(REPO, p)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def weights_vs_dump(model, module, infer):
    """Problems (list of str) between the module's state_dict and `infer --dump`'s weights."""
    yaml = os.path.join(REPO, "models", model + ".yaml")
    r = subprocess.run([infer, "--model", yaml, "--seeded", "--dump"], capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 0:
        return [f"infer --dump failed ({r.returncode}): {r.stderr.strip()[:300]}"]
    fusert_w, fusert_in = {}, {}
    for line in r.stdout.splitlines():
        m = re.match(r"^  weight (\S+)\[([0-9, ]*)\] init=(\w+)", line)
        if m:
            fusert_w[m.group(1)] = ([int(d) for d in m.group(2).split(",") if d.strip()], m.group(3))
        m = re.match(r"^  input  (\S+)\[([0-9, ]*)\] (\w+)", line)
        if m:
            fusert_in[m.group(1)] = ([int(d) for d in m.group(2).split(",") if d.strip()], m.group(3))
    problems = []
    want_in = {n: (s, d) for n, s, d in ZOO[model]}
    if fusert_in != want_in:
        problems.append(f"inputs: infer --dump {fusert_in}, torch_bench {want_in}")
    # seed_module seeded the inner module under its own names; wrappers add a prefix.
    sd = {}
    for k, v in module.state_dict().items():
        if k.endswith("num_batches_tracked"):
            continue
        if isinstance(module, _BertLayerWithMask) and k.startswith("layer."):
            k = k[len("layer."):]
        elif isinstance(module, _SentenceEmbedding) and k.startswith("bert."):
            k = k[len("bert."):]
        sd[k] = v
    for k, v in sd.items():
        if k not in fusert_w:
            problems.append(f"torch tensor '{k}' {list(v.shape)} is not a weight of the YAML model")
            continue
        shape, init = fusert_w[k]
        if shape != list(v.shape) or init != init_for(k, v.dim()):
            problems.append(f"'{k}': torch {list(v.shape)} {init_for(k, v.dim())}, fusert {shape} {init}")
    for k in fusert_w:
        if k not in sd:
            problems.append(f"fusert weight '{k}' is not in the torch state_dict")
    return problems


def read_npy(path):
    return np.load(path)


def output_vs_infer(model, y, infer):
    """(rel L2, message) of the torch CPU output against `infer --seeded --output`."""
    yaml = os.path.join(REPO, "models", model + ".yaml")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "y.npy")
        r = subprocess.run([infer, "--model", yaml, "--seeded", "--output", out], capture_output=True,
                           text=True, timeout=300)
        if r.returncode != 0:
            return None, f"infer --output failed ({r.returncode}): {r.stderr.strip()[:300]}"
        ref = read_npy(out).astype(np.float64)
    a = y.detach().double().numpy()
    if a.shape != ref.shape:
        return None, f"shape: torch {list(a.shape)}, fusert {list(ref.shape)}"
    rel = float(np.linalg.norm((a - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-30))
    return rel, f"rel L2 {rel:.3g}, max abs {float(np.abs(a - ref).max()):.3g}"


# ------------------------------------------------------------------------------------------
# Timing on CUDA
# ------------------------------------------------------------------------------------------

def time_cuda(fn, args, runs, warmup):
    """(median, min, max) ms of fn(*args), each run between two CUDA events."""
    with torch.no_grad():
        for _ in range(warmup):
            fn(*args)
        torch.cuda.synchronize()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(runs)]
        for s, e in zip(starts, ends):
            s.record()
            fn(*args)
            e.record()
        torch.cuda.synchronize()
    t = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return statistics.median(t), min(t), max(t)


def disable_tf32():
    """fp32 as fusert's default: no TF32 in cuBLAS or cuDNN. One API only: PyTorch >= 2.9 has
    fp32_precision and objects to mixing it with the legacy allow_tf32 flags."""
    if hasattr(torch.backends, "fp32_precision"):
        torch.backends.fp32_precision = "ieee"
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        return ("fp32_precision = 'ieee' (matmul "
                f"{torch.backends.cuda.matmul.fp32_precision}, conv {torch.backends.cudnn.conv.fp32_precision})")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return "allow_tf32 = False (cuBLAS, cuDNN), float32_matmul_precision 'highest'"


class _Alarm(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Alarm()


def rel_l2(a, b):
    a, b = a.detach().double().flatten(), b.detach().double().flatten()
    return float(torch.linalg.norm(a - b) / torch.clamp(torch.linalg.norm(b), min=1e-30))


def bench_model(name, args, compile_it):
    row = {"model": name, "runs": args.runs, "warmup": args.warmup, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0), "tf32": False,
           "cudnn_benchmark": bool(torch.backends.cudnn.benchmark)}
    try:
        module, ref = BUILDERS[name]()
    except Skip as e:
        return dict(row, status="skipped", reason=str(e))
    except Exception as e:  # a builder that broke on this torch / transformers version
        return dict(row, status="error", reason=f"build: {type(e).__name__}: {e}")
    row["reference"] = ref
    dev = torch.device(DEVICE)
    module = module.to(dev).eval()
    inputs = [t.to(dev) for t in seeded_inputs(name)]
    row["weight_bytes"] = nbytes(list(module.parameters()) + list(module.buffers()))
    try:
        with torch.no_grad():
            y = module(*inputs)
        outs = list(y) if isinstance(y, (tuple, list)) else [y]
        row["io_bytes"] = nbytes(inputs) + nbytes(outs)
        med, lo, hi = time_cuda(module, inputs, args.runs, args.warmup)
        row.update(status="ok", eager_ms=med, eager_min_ms=lo, eager_max_ms=hi)
    except Exception as e:
        return dict(row, status="error", reason=f"eager: {type(e).__name__}: {e}")
    log(f"{name}: eager median {med:.3f} ms")
    if not compile_it:
        row["compile_status"] = "not run (not in --compile-models)"
        return row
    # torch.compile, first call under an alarm; errors and timeouts are reported, not raised.
    try:
        importlib.import_module("torch._dynamo").reset()  # a fresh compile cache per model
        compiled = torch.compile(module, mode="default")
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.alarm(max(1, int(args.compile_timeout)))
        t0 = time.perf_counter()
        try:
            with torch.no_grad():
                yc = compiled(*inputs)
            torch.cuda.synchronize()
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        row["compile_s"] = round(time.perf_counter() - t0, 2)
        row["compile_rel_l2"] = rel_l2(first_output(name, yc), first_output(name, y))
        med, lo, hi = time_cuda(compiled, inputs, args.runs, args.warmup)
        row.update(compile_status="ok", compile_ms=med, compile_min_ms=lo, compile_max_ms=hi)
        log(f"{name}: compile {row['compile_s']} s, median {med:.3f} ms")
    except _Alarm:
        row["compile_status"] = f"timeout after {args.compile_timeout} s"
        log(f"{name}: torch.compile timed out")
    except Exception as e:
        msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
        row["compile_status"] = "error: " + msg
        log(f"{name}: torch.compile failed: {msg}")
    return row


def copy_bandwidth(args):
    n = args.copy_bytes // 4
    src = torch.rand(n, device=DEVICE)  # random, not zeros (METHOD.md)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    t = []
    for _ in range(args.copy_runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        dst.copy_(src)
        e.record()
        e.synchronize()
        t.append(s.elapsed_time(e))
    ok = bool(torch.equal(dst[:1 << 20], src[:1 << 20]))
    med = statistics.median(t)
    nb = n * 4
    return {"copy_bandwidth": True, "bytes": nb, "runs": args.copy_runs, "median_ms": med,
            "min_ms": min(t), "gbps_rw": 2 * nb / (med * 1e-3) / 1e9,
            "gbps_one_way": nb / (med * 1e-3) / 1e9, "copy_checked": ok,
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__}


# ------------------------------------------------------------------------------------------

def parse_list(value, allowed, what):
    if value in ("all", None):
        return list(allowed)
    if value in ("none", ""):
        return []
    names = [v.strip() for v in value.split(",") if v.strip()]
    bad = [n for n in names if n not in allowed]
    if bad:
        raise SystemExit(f"torch_bench: {what}: unknown model(s) {bad}; known: {', '.join(allowed)}")
    return names


def dry_run(args, models, compiled):
    torch.set_num_threads(args.threads)
    infer = None if args.no_fusert_check else find_infer(args.infer)
    log(f"dry run on the CPU (torch {torch.__version__}); infer for checks: {infer or 'none found'}")
    failures = 0
    for name in models:
        try:
            module, ref = BUILDERS[name]()
        except Skip as e:
            log(f"{name}: would skip: {e}")
            print(json.dumps({"model": name, "status": "skipped", "reason": str(e)}), flush=True)
            continue
        except Exception as e:
            log(f"{name}: builder FAILED: {type(e).__name__}: {e}")
            print(json.dumps({"model": name, "status": "error", "reason": f"build: {e}"}), flush=True)
            failures += 1
            continue
        inputs = seeded_inputs(name)
        with torch.no_grad():
            y = module(*inputs)
        y1 = first_output(name, y)
        row = {"model": name, "status": "dry-run", "reference": ref,
               "weight_bytes": nbytes(list(module.parameters()) + list(module.buffers())),
               "inputs": [[n, s, d] for n, s, d in ZOO[name]], "output_shape": list(y1.shape),
               "would_time": ["eager"] + (["compile"] if name in compiled else [])}
        if infer:
            problems = weights_vs_dump(name, module, infer)
            row["weights_match_fusert"] = not problems
            for p in problems[:10]:
                log(f"{name}: MISMATCH {p}")
            rel, msg = output_vs_infer(name, y1, infer)
            row["output_vs_fusert"] = msg
            ok = not problems and rel is not None and rel <= 1e-4
            failures += not ok
            log(f"{name}: weights {'match' if not problems else 'DIFFER'} ({len(problems)} problem(s)); "
                f"first output vs infer --seeded: {msg}: {'ok' if ok else 'FAILED'}")
        else:
            log(f"{name}: built, seeded state_dict loaded, output {list(y1.shape)}")
        print(json.dumps(row), flush=True)
    print(json.dumps({"dry_run": True, "would_run": {
        "models": models, "compile_models": compiled, "runs": args.runs, "warmup": args.warmup,
        "compile_timeout_s": args.compile_timeout, "copy_bandwidth": args.copy_bandwidth,
        "copy_bytes": args.copy_bytes, "copy_runs": args.copy_runs}, "failures": failures}),
        flush=True)
    return 1 if failures else 0


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="PyTorch eager / torch.compile latency of the fusert zoo on CUDA (seeded weights).",
        epilog="Prints one JSON object per line. See the module docstring for the fields.")
    ap.add_argument("--models", default="all", help="comma list or 'all' (default all): " + ", ".join(ZOO))
    ap.add_argument("--compile-models", default=",".join(DEFAULT_COMPILE),
                    help="models to torch.compile: comma list, 'all' or 'none' (default %(default)s)")
    ap.add_argument("--no-compile", action="store_true", help="eager only (same as --compile-models none)")
    ap.add_argument("--compile-timeout", type=float, default=60.0,
                    help="seconds allowed for one model's compilation (default %(default)s)")
    ap.add_argument("--runs", type=int, default=200, help="timed runs per model (default %(default)s)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed runs first (default %(default)s)")
    ap.add_argument("--cudnn-benchmark", action="store_true",
                    help="torch.backends.cudnn.benchmark = True (default: PyTorch's default, off)")
    ap.add_argument("--copy-bandwidth", action="store_true",
                    help="measure device-to-device copy bandwidth (and skip the models unless "
                         "--models is given explicitly)")
    ap.add_argument("--copy-bytes", type=int, default=1 << 30, help="copy buffer bytes (default 1 GiB)")
    ap.add_argument("--copy-runs", type=int, default=20, help="timed copies (default %(default)s)")
    ap.add_argument("--pylib", action="append", default=[],
                    help="folder holding efficientnet_lite_pytorch (repeatable; default: "
                         "build-gpu/pylib, then .cache/pylib)")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU needed: build on the CPU, check against infer, print the plan")
    ap.add_argument("--infer", help="fusert infer binary for the dry run's checks")
    ap.add_argument("--no-fusert-check", action="store_true", help="dry run: skip the infer checks")
    ap.add_argument("--threads", type=int, default=2, help="CPU threads for the dry run")
    args = ap.parse_args(argv)

    _PYLIB_DIRS[:] = [os.path.abspath(p) for p in args.pylib] + [os.path.join(REPO, "build-gpu", "pylib")]
    models_given = any(a == "--models" or a.startswith("--models=") for a in (argv or sys.argv[1:]))
    models = parse_list(args.models, list(ZOO), "--models")
    if args.copy_bandwidth and not models_given:
        models = []
    compiled = [] if args.no_compile else parse_list(args.compile_models, list(ZOO), "--compile-models")
    compiled = [m for m in compiled if m in models]

    if args.dry_run:
        return dry_run(args, models, compiled)

    if not torch.cuda.is_available():
        log("no CUDA device visible to PyTorch (use --dry-run on a machine without a GPU)")
        return 1
    log(f"fp32 math: {disable_tf32()}")
    torch.backends.cudnn.benchmark = bool(args.cudnn_benchmark)
    status = 0
    if args.copy_bandwidth:
        try:
            print(json.dumps(copy_bandwidth(args)), flush=True)
        except Exception as e:
            print(json.dumps({"copy_bandwidth": True, "status": "error", "reason": str(e)}), flush=True)
            status = 1
    for name in models:
        row = bench_model(name, args, name in compiled)
        if row.get("status") == "skipped":
            log(f"{name}: skipped: {row['reason']}")
        elif row.get("status") == "error":
            log(f"{name}: ERROR: {row['reason']}")
            status = 1
        print(json.dumps(row), flush=True)
        torch.cuda.empty_cache()
    return status


if __name__ == "__main__":
    sys.exit(main())
