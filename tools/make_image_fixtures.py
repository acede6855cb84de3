#!/usr/bin/env python3
"""Writes the small image fixtures of tests/fuzz_loaders/corpus/image (the image fuzz target's
seeds, also decoded by tests/runtime/test_image.cc) and their expected RGB pixels as Pillow
decodes them (Image.open(f).convert("RGB")), the independent reference for fusert's
libpng/libjpeg-turbo decoding: tests/runtime/data/images_expected.json.

Run with Debian's python3-pil (/usr/bin/python3 tools/make_image_fixtures.py); Pillow there
links the system libjpeg-turbo, so JPEG pixels are expected to match exactly.
"""
import sys
import json
import os

from PIL import Image

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "tests", "fuzz_loaders", "corpus", "image")
OUT = os.path.join(ROOT, "tests", "runtime", "data", "images_expected.json")


def gradient(w, h):
    img = Image.new("RGB", (w, h))
    img.putdata([((x * 29 + y * 7) % 256, (y * 37 + 11) % 256, (x * y * 13 + 90) % 256)
                 for y in range(h) for x in range(w)])
    return img


def main():
    base = gradient(9, 7)
    made = {
        "gray_alpha_9x7.png": base.convert("LA"),
        "gray_1bit_9x7.png": base.convert("1"),
    }
    pal = base.convert("P", palette=Image.ADAPTIVE, colors=16)
    pal.info["transparency"] = 0
    made["palette_trns_9x7.png"] = pal
    for name, img in made.items():
        kw = {"transparency": 0} if name == "palette_trns_9x7.png" else {}
        img.save(os.path.join(CORPUS, name), **kw)

    expected = {}
    for name in sorted(os.listdir(CORPUS)):
        if not name.endswith((".png", ".jpg")):
            continue
        with Image.open(os.path.join(CORPUS, name)) as img:
            rgb = img.convert("RGB")
            expected[name] = {"height": rgb.height, "width": rgb.width, "mode": img.mode,
                              "rgb": [v for px in rgb.getdata() for v in px]}
    with open(OUT, "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(expected)} images to {OUT}")


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    main()
