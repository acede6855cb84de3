#!/usr/bin/env python3
"""Checks that every repository path the documentation names exists: in README.md, docs/*.md,
models/*.md and tools/README.md, each token that starts with a top-level source folder (graph/,
runtime/, kernels/, models/, apps/, tests/, tools/, docs/, examples/, .ci/, python/) must be a file
or folder of the tree. A path followed by a glob or placeholder (`tests/cuda_emu/*_host.cc`,
`results.{json,md}`, `<name>`) names a family, not a file, and is skipped. ctest `docs_paths` in
`make test`; exit 1 with the list of what is missing.

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


def main():
    bad = [m for d in documents() for m in missing(d)]
    for b in bad:
        print(f"docs_paths: no such path: {b}")
    print(f"docs_paths: {len(documents())} documents, {len(bad)} missing paths")
    return 1 if bad else 0


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
