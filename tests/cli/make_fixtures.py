#!/usr/bin/env python3
"""Writes the binary fixtures of the CLI tests into OUT_DIR (stdlib only: no numpy needed).

  tiny.safetensors             conv.weight [2, 3, 3, 3] + conv.bias [2] for data/tiny.yaml
  tiny_extra.safetensors       the same plus an unused tensor 'bogus'
  tiny_missing.safetensors     conv.weight only
  tiny_misshaped.safetensors   conv.weight [2, 3, 1, 1]
  tiny_truncated.safetensors   tiny.safetensors cut inside its data section
  x_ok.npy / x_wrong_shape.npy f32 inputs [1, 3, 4, 4] and [1, 3, 5, 5]
  not_an_image.png             a text file with a .png name
  truncated.png                the first 100 bytes of models/data/coffee.png
  tiny_expected.json           y of data/tiny.yaml for x_ok.npy and tiny.safetensors, computed
                               here by a naive loop in double precision (the CLI's reference)
"""
import json
import os
import struct
import sys


def safetensors(tensors):
    """tensors: list of (name, shape, list of floats) -> bytes (F32, little-endian)."""
    header, data = {}, b""
    for name, shape, values in tensors:
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + data


def npy(shape, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % "".join("%d, " % d for d in shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<%df" % len(values), *values)


def tiny_reference(x, weight, bias):
    """data/tiny.yaml by hand: conv 3x3 pads 1 on [1, 3, 4, 4] + bias, ReLU, mean over 4x4."""
    y = []
    for m in range(2):
        total = 0.0
        for oy in range(4):
            for ox in range(4):
                acc = bias[m]
                for c in range(3):
                    for ky in range(3):
                        for kx in range(3):
                            iy, ix = oy - 1 + ky, ox - 1 + kx
                            if 0 <= iy < 4 and 0 <= ix < 4:
                                acc += x[(c * 4 + iy) * 4 + ix] * weight[((m * 3 + c) * 3 + ky) * 3 + kx]
                total += max(acc, 0.0)
        y.append(total / 16.0)
    return y


def main():
    out, repo = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    weight = [((i * 7) % 11 - 5) / 10.0 for i in range(54)]
    bias = [0.25, -0.5]
    x = [(i % 5) / 5.0 for i in range(48)]
    # Round to float32 first, as the files store them.
    f32 = lambda v: [struct.unpack("<f", struct.pack("<f", a))[0] for a in v]
    expected = tiny_reference(f32(x), f32(weight), f32(bias))
    files = {
        "tiny.safetensors": safetensors([("conv.weight", [2, 3, 3, 3], weight), ("conv.bias", [2], bias)]),
        "tiny_extra.safetensors": safetensors([("conv.weight", [2, 3, 3, 3], weight), ("conv.bias", [2], bias),
                                               ("bogus", [3], [1.0, 2.0, 3.0])]),
        "tiny_missing.safetensors": safetensors([("conv.weight", [2, 3, 3, 3], weight)]),
        "tiny_misshaped.safetensors": safetensors([("conv.weight", [2, 3, 1, 1], weight[:6]), ("conv.bias", [2], bias)]),
        "x_ok.npy": npy([1, 3, 4, 4], x),
        "x_wrong_shape.npy": npy([1, 3, 5, 5], [0.0] * 75),
        "not_an_image.png": b"this is a text file, not a PNG\n",
        "tiny_expected.json": json.dumps({"shape": [1, 2], "values": expected}).encode(),
    }
    good = files["tiny.safetensors"]
    files["tiny_truncated.safetensors"] = good[: len(good) - 100]
    with open(os.path.join(repo, "models", "data", "coffee.png"), "rb") as f:
        files["truncated.png"] = f.read(100)
    for name, data in files.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
