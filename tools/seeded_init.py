#!/usr/bin/env python3
"""Seeded initialisation of models/FORMAT.md, bit-exact, vectorised with numpy.

The C++ runtime (runtime/weights) implements the same algorithm; `python3 tools/seeded_init.py`
prints reference values that its tests compare against.
"""
import math
import sys

import numpy as np

_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_MASK64 = (1 << 64) - 1


def fnv1a64(data: bytes) -> int:
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _MASK64
    return h


def init_range(init: str, shape) -> tuple:
    """(lo, hi) of the uniform draw for `init`, as the table in FORMAT.md gives it."""
    if init == "kaiming":
        if len(shape) < 2:
            raise ValueError(f"kaiming needs rank >= 2, got shape {list(shape)}")
        fan_in = math.prod(int(d) for d in shape[1:])
        bound = math.sqrt(3.0 / fan_in)
        return -bound, bound
    if init == "uniform":
        return -0.1, 0.1
    if init in ("bn_scale", "bn_var"):
        return 0.5, 1.5
    if init == "input":
        return -1.0, 1.0
    raise ValueError(f"unknown init '{init}'")


def seeded_uniform01(name: str, n: int, seed: int = 0) -> np.ndarray:
    """The n values u in [0, 1) (float64) of the splitmix64 stream keyed by name and seed."""
    state0 = fnv1a64(name.encode("utf-8")) ^ ((seed * _GOLDEN) & _MASK64)
    # uint64 arithmetic in numpy wraps modulo 2^64, which is what the spec asks for.
    with np.errstate(over="ignore"):
        i = np.arange(1, n + 1, dtype=np.uint64)
        z = np.uint64(state0) + i * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
        z = z ^ (z >> np.uint64(31))
    # z >> 11 has 53 bits, so the conversion to double is exact; * 2^-53 is exact too.
    return (z >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)


def seeded_tensor(name: str, shape, init: str, seed: int = 0) -> np.ndarray:
    """float32 tensor of `shape` filled as FORMAT.md's "Seeded initialisation" says."""
    shape = tuple(int(d) for d in shape)
    n = math.prod(shape)
    if init == "zeros":
        return np.zeros(shape, dtype=np.float32)
    if init == "ones":
        return np.ones(shape, dtype=np.float32)
    lo, hi = init_range(init, shape)
    u = seeded_uniform01(name, n, seed)
    # lo + (hi - lo) * u in double, then rounded to nearest float32.
    return (lo + (hi - lo) * u).astype(np.float32).reshape(shape)


def _scalar_reference(name: str, i: int, lo: float, hi: float, seed: int = 0) -> np.float32:
    """Plain-integer transcription of the spec, used to check the vectorised path."""
    z = (fnv1a64(name.encode("utf-8")) ^ (seed * _GOLDEN & _MASK64)) + (i + 1) * _GOLDEN
    z &= _MASK64
    z = ((z ^ (z >> 30)) * _MIX1) & _MASK64
    z = ((z ^ (z >> 27)) * _MIX2) & _MASK64
    z = z ^ (z >> 31)
    u = float(z >> 11) * 2.0 ** -53
    return np.float32(lo + (hi - lo) * u)


def _f32_hex(v) -> str:
    return "0x%08x" % int(np.float32(v).view(np.uint32))


def self_check() -> int:
    cases = [
        ("conv1.weight", [64, 3, 7, 7], "kaiming", 0),
        ("bn1.weight", [64], "bn_scale", 0),
        ("fc.bias", [1000], "uniform", 0),
        ("input", [1, 3, 224, 224], "input", 0),
        ("conv1.weight", [64, 3, 7, 7], "kaiming", 1),
    ]
    ok = True
    for name, shape, init, seed in cases:
        t = seeded_tensor(name, shape, init, seed).reshape(-1)
        lo, hi = init_range(init, shape)
        idx = [0, 1, 2, 3, t.size - 1]
        ref = [_scalar_reference(name, i, lo, hi, seed) for i in idx]
        match = all(t[i].view(np.uint32) == r.view(np.uint32) for i, r in zip(idx, ref))
        ok = ok and match and bool(np.all((t >= lo) & (t <= hi)))
        print(f'seeded_tensor("{name}", {shape}, "{init}", seed={seed}): fnv1a64=0x%016x'
              % fnv1a64(name.encode()))
        print("  first 4: " + " ".join(_f32_hex(v) for v in t[:4])
              + "  = " + " ".join(repr(float(v)) for v in t[:4]))
        print(f"  last [{t.size - 1}]: {_f32_hex(t[-1])} = {float(t[-1])!r}"
              f"  sum(f64)={float(t.astype(np.float64).sum())!r}")
    print("self-check (vectorised == scalar transcription):", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    sys.exit(self_check())
