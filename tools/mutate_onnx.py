#!/usr/bin/env python3
"""Mutated ONNX files for the import's fuzz target, without libFuzzer: byte flips, inserted
bytes, huge little-endian integers and truncations of ONNX's own test models.

    python3 tools/mutate_onnx.py OUT_DIR [--count 20000] [--seed 2] [--filter resize,convtranspose]
    ASAN_OPTIONS=detect_leaks=0 build-asan/tests/fuzz_replay_onnx OUT_DIR   # an ASan+UBSan build

Found a signed overflow in Reshape's shape function (a crafted target of 2^40 x 2^40) that
tests/graph/test_onnx_import.cc now covers."""
import argparse
import glob
import os
import random


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=2)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--filter", default="", help="only models whose case name contains one of these (comma list)")
    a = ap.parse_args()
    random.seed(a.seed)
    srcs = sorted(glob.glob(os.path.join(a.data, "*", "*", "model.onnx")))
    if a.filter:
        keys = [k.lower() for k in a.filter.split(",") if k]
        srcs = [p for p in srcs if any(k in os.path.basename(os.path.dirname(p)).lower() for k in keys)]
    if not srcs:
        raise SystemExit(f"no models under {a.data} (apt-get install libonnx-testdata)")
    os.makedirs(a.out, exist_ok=True)
    big = [2**31, 2**40, 2**62, 2**63 - 1, 2**64 - 1]
    for k in range(a.count):
        b = bytearray(open(random.choice(srcs), "rb").read())
        if random.random() < 0.2 and len(b) > 4:
            b = b[:random.randrange(len(b))]
        else:
            for _ in range(random.randint(1, 6)):
                i = random.randrange(len(b))
                op = random.random()
                if op < 0.4:
                    b[i] = random.randrange(256)
                elif op < 0.7:
                    b[i] ^= 1 << random.randrange(8)
                elif op < 0.85:
                    b[i:i] = bytes([random.choice([0, 1, 0x7F, 0x80, 0xFF])])
                else:
                    b[i:i + 8] = random.choice(big).to_bytes(8, "little")
        with open(os.path.join(a.out, f"m{k}.onnx"), "wb") as f:
            f.write(b)
    print(f"wrote {a.count} mutants of {len(srcs)} models to {a.out}")


if __name__ == "__main__":
    main()
