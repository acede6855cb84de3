#!/usr/bin/env python3
"""Reports C++/CUDA files and functions over the size budget of the style guide: files over
400 lines (passes and generators are allowed ~600), functions over 60 lines. CI prints it;
`--fail` makes it exit 1 when anything is over (a local check); `--check BUDGET` makes it exit 1
when either count rises above the one checked in to BUDGET (tools/size_budget.txt: the ratchet
`make test` runs as ctest `size_ratchet`; when a count falls, lower the budget with it).

Functions are found with a brace scanner after string literals, raw strings and comments are
blanked: a body is a `{` at namespace or class depth whose statement text looks like a
function head (`name(...)` and not a control statement, class, enum or initializer).

  python3 tools/size_report.py [--fail | --check BUDGET] [paths...]   (default: graph kernels runtime apps)
"""
import os
import re
import subprocess
import sys

FILE_BUDGET = 400
FUNCTION_BUDGET = 60
DEFAULT_DIRS = ["graph", "kernels", "runtime", "apps"]
SUFFIXES = (".cc", ".h", ".cu", ".cuh")

RAW = re.compile(r'R"([^(\s]*)\((.*?)\)\1"', re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
BLOCK = re.compile(r"/\*.*?\*/", re.S)
LINE = re.compile(r"//[^\n]*")
NOT_FUNCTION = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return|namespace|class|struct|union|enum)\b|=\s*$|\]\s*\(")
HEAD = re.compile(r"([A-Za-z_~][\w:<>,~ *&]*)\s*\(")


def blank(text):
    """Blanks literals and comments, keeping newlines so line numbers hold."""
    keep_lines = lambda m: re.sub(r"[^\n]", " ", m.group(0))
    for pattern in (RAW, BLOCK, STRING, LINE):
        text = pattern.sub(keep_lines, text)
    return text


def functions(path):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    out, stack, stmt, line = [], [], "", 1
    for ch in text:
        if ch == "\n":
            line += 1
        if ch == "{":
            head = " ".join(stmt.split())
            is_fn = bool(HEAD.search(head)) and not NOT_FUNCTION.search(head) and all(k != "fn" for k, _, _ in stack)
            stack.append(("fn" if is_fn else "block", line, head))
            stmt = ""
        elif ch == "}":
            if stack:
                kind, start, head = stack.pop()
                if kind == "fn":
                    name = HEAD.search(head).group(1).split()[-1] if HEAD.search(head) else head
                    out.append((name.lstrip("*&"), start, line - start + 1))
            stmt = ""
        elif ch == ";":
            stmt = ""
        else:
            stmt += ch
    return out


def sources(paths):
    files = subprocess.run(["git", "ls-files", *paths], capture_output=True, text=True, check=True).stdout.split()
    return [f for f in files if f.endswith(SUFFIXES)]


def read_budget(path):
    """{"files": n, "functions": n} from lines `files_over_400 N` and `functions_over_60 N`."""
    budget = {}
    for line in open(path, encoding="utf-8"):
        parts = line.split("#")[0].split()
        if len(parts) == 2 and parts[0] in ("files_over_400", "functions_over_60"):
            budget["files" if parts[0].startswith("files") else "functions"] = int(parts[1])
    if set(budget) != {"files", "functions"}:
        sys.exit(f"size_report: {path} must give files_over_400 N and functions_over_60 N")
    return budget


def check(budget_path, n_files, n_functions):
    """Exit status of the ratchet: 1 when a count rose above the budget."""
    budget = read_budget(budget_path)
    status = 0
    for what, n, limit in (("files over 400 lines", n_files, budget["files"]),
                           ("functions over 60 lines", n_functions, budget["functions"])):
        if n > limit:
            print(f"size ratchet: {n} {what}, the budget in {budget_path} is {limit}: split what grew (list above)")
            status = 1
        elif n < limit:
            print(f"size ratchet: {n} {what}, below the budget of {limit}: lower it in {budget_path}")
    return status


def main(argv):
    fail = "--fail" in argv
    budget_path = None
    if "--check" in argv:
        i = argv.index("--check")
        if i + 1 >= len(argv):
            sys.exit("size_report: --check needs the budget file")
        budget_path = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    paths = [a for a in argv if not a.startswith("--")] or DEFAULT_DIRS
    big_files, big_functions = [], []
    for f in sources(paths):
        n = sum(1 for _ in open(f, encoding="utf-8", errors="replace"))
        if n > FILE_BUDGET:
            big_files.append((n, f))
        for name, start, length in functions(f):
            if length > FUNCTION_BUDGET:
                big_functions.append((length, f"{f}:{start}", name))
    print(f"size report: {len(big_files)} files over {FILE_BUDGET} lines, "
          f"{len(big_functions)} functions over {FUNCTION_BUDGET} lines")
    for n, f in sorted(big_files, reverse=True):
        print(f"  file {n:5d} lines  {f}")
    for n, where, name in sorted(big_functions, reverse=True):
        print(f"  function {n:4d} lines  {where}  {name}")
    if budget_path:
        return check(budget_path, len(big_files), len(big_functions))
    return 1 if fail and (big_files or big_functions) else 0


if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    os.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
