#!/usr/bin/env python3
"""Checks that every repository path the documentation names exists: in README.md, docs/*.md,
models/*.md and tools/README.md, each token that starts with a top-level source folder (graph/,
runtime/, kernels/, models/, apps/, tests/, tools/, docs/, examples/, .ci/, python/) must be a file
or folder of the tree. A path followed by a glob or placeholder (`tests/cuda_emu/*_host.cc`,
`results.{json,md}`, `<name>`) names a family, not a file, and is skipped. ctest `docs_paths` in
`make test`; exit 1 with the list of what is missing. Also every file in tools/ must have a row in
tools/README.md's tables (its name in backticks at the start of a row).

  python3 tools/docs_paths.py
"""
import glob
import os
import re
import sys

ROOTS = r"(?:graph|runtime|kernels|models|apps|tests|tools|docs|examples|\.ci|python)/"
PATH = re.compile(r"(?<![\w./~$-])(" + ROOTS + r"[\w./+-]*\w)")


def documents():
    return ["README.md", "tools/README.md"] + sorted(glob.glob("docs/*.md")) + sorted(glob.glob("models/*.md"))


def missing(doc):
    out = []
    for ln, line in enumerate(open(doc, encoding="utf-8"), 1):
        for m in PATH.finditer(line):
            path, after = m.group(1), line[m.end():m.end() + 2]
            if os.path.exists(path) or after[:1] in "*<{[$" or after == ".{":
                continue
            out.append(f"{doc}:{ln}: {path}")
    return out


def tools_without_row():
    rows = [ln for ln in open("tools/README.md", encoding="utf-8") if ln.startswith("| `")]
    named = set()
    for ln in rows:
        first = ln.split(" | ")[0]
        named.update(re.findall(r"`([\w.]+)", first))
    return [f for f in sorted(os.listdir("tools")) if not f.startswith((".", "__")) and f != "README.md"
            and f not in named]


def main():
    bad = [m for d in documents() for m in missing(d)]
    for b in bad:
        print(f"docs_paths: no such path: {b}")
    unlisted = tools_without_row()
    for f in unlisted:
        print(f"docs_paths: tools/{f} has no row in tools/README.md")
    print(f"docs_paths: {len(documents())} documents, {len(bad)} missing paths, {len(unlisted)} tools without a row")
    return 1 if bad or unlisted else 0


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
