"""Shared by the golden scripts: seeded weights for PyTorch modules, safetensors via numpy, JSON.

The seeded-init rule matches the YAML models' `init` kinds: rank >= 2 "kaiming"; rank-1
".weight" (BatchNorm/LayerNorm scale) "bn_scale"; ".running_var" "bn_var"; ".bias" and
".running_mean" "uniform"; BatchNorm's num_batches_tracked is not a weight.
"""

import json

import numpy as np
import torch

from seeded_init import seeded_tensor


def init_for(name, rank):
    if rank >= 2:
        return "kaiming"
    if name.endswith(".running_var"):
        return "bn_var"
    if name.endswith(".weight"):
        return "bn_scale"
    if name.endswith(".bias") or name.endswith(".running_mean"):
        return "uniform"
    raise ValueError(f"no seeded init rule for {name}")


def seed_module(module):
    """Replaces every state_dict tensor of `module` by its seeded value; returns it in eval mode."""
    sd = module.state_dict()
    for name, t in sd.items():
        if name.endswith("num_batches_tracked"):
            continue
        sd[name] = torch.from_numpy(seeded_tensor(name, list(t.shape), init_for(name, t.dim())))
    module.load_state_dict(sd, strict=True)
    return module.eval()


def read_safetensors(path):
    """{name: ndarray} of a safetensors file (F32 / I64), read with numpy."""
    with open(path, "rb") as f:
        blob = f.read()
    hlen = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + hlen])
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        dt = {"F32": "<f4", "I64": "<i8"}[e["dtype"]]
        begin, end = e["data_offsets"]
        count = (end - begin) // np.dtype(dt).itemsize
        out[name] = np.frombuffer(blob, dt, count, 8 + hlen + begin).reshape(e["shape"]).copy()
    return out


def write_json(path, obj, ensure_ascii=True):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=ensure_ascii)
        f.write("\n")
