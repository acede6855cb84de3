#!/usr/bin/env python3
"""A Transformer encoder as PyTorch exports it to ONNX with a symbolic batch and sequence, for the
real-model cases of tools/ort_cases.py (ctest onnx_ort_cases), which compare it with ONNX Runtime.

    /usr/bin/python3 tools/transformer_onnx.py export     # Debian PyTorch (make onnx-models runs it)

The model: token embeddings (vocabulary 1000, width 128), two torch.nn.TransformerEncoderLayer
(4 heads, FFN 256, ReLU, post-norm, batch first) taking a key padding mask made from an int64
attention mask, and a final LayerNorm; seeded weights (torch.manual_seed(0)). Exported with
torch.onnx.export at opset 17, inputs `ids` and `mask` [batch, seq] int64, output `y` [batch, seq,
128], both dims symbolic, to .cache/transformer-onnx/encoder.onnx. Redone only when this script or
torch changed (a stamp file).
"""
import argparse
import hashlib
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".cache", "transformer-onnx")
MODEL = os.path.join(CACHE, "encoder.onnx")


def export():
    import torch
    import torch.nn as nn

    class Encoder(nn.Module):
        def __init__(self, vocab=1000, width=128, heads=4, ffn=256, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, width)
            self.layers = nn.ModuleList([nn.TransformerEncoderLayer(width, heads, ffn, dropout=0.0, batch_first=True)
                                         for _ in range(layers)])
            self.norm = nn.LayerNorm(width)

        def forward(self, ids, mask):
            x = self.emb(ids)
            pad = mask == 0
            for layer in self.layers:
                x = layer(x, src_key_padding_mask=pad)
            return self.norm(x)

    stamp = hashlib.sha256(open(__file__, "rb").read() + torch.__version__.encode()).hexdigest()
    stamp_path = MODEL + ".stamp"
    if os.path.exists(MODEL) and os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        print(f"[transformer] {MODEL} present")
        return
    os.makedirs(CACHE, exist_ok=True)
    torch.manual_seed(0)
    m = Encoder().eval()
    ids = torch.randint(0, 1000, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    # Not under torch.no_grad(): there TransformerEncoderLayer takes its fused fast path, which has
    # no ONNX export.
    torch.onnx.export(m, (ids, mask), MODEL + ".part", opset_version=17, input_names=["ids", "mask"],
                      output_names=["y"], dynamic_axes={"ids": {0: "batch", 1: "seq"}, "mask": {0: "batch", 1: "seq"},
                                                        "y": {0: "batch", 1: "seq"}})
    os.replace(MODEL + ".part", MODEL)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    print(f"[transformer] {MODEL} ({os.path.getsize(MODEL) // 1024} KiB)", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["export"])
    ap.parse_args()
    export()
    return 0


if __name__ == "__main__":
    sys.exit(main())
