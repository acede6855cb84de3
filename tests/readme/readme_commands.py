#!/usr/bin/env python3
"""Runs the commands of README.md's code blocks, as a new user would after the quick start
(`make run`, `make test`) on a clean clone: `make readme-check`, which CI (.ci/run) runs after
`make test`. A command is a code-block line that starts like one (./build/, build/, make,
.cache/onnx-venv/bin/python, PYTHONPATH=..., /usr/bin/python3 ...; a leading "$ " prompt is
dropped), with its continuation lines; the output shown under it is not run.

Each command either runs (exit 0 within its timeout), or is one of these, by the first rule of
RULES that matches it:
  skip   the quick start itself, long or machine-wide commands (a stated reason each);
  gpu    a --device cuda command: passes if it runs, or fails with the no-GPU error the README
         promises (exit 1, "no CUDA device" / "no NVIDIA GPU" / "CUDA driver") on a machine
         without one;
  unsupported  an example of the error for an op fusert does not run: passes when it shows it;
  bf16   a --precision bf16 command: passes if it runs, or fails with the refusal the README
         promises on a CPU without native bf16 ("no native bf16");
  serve  a server: started in the background until it answers GET /metadata, then the client
         block that follows it in the README runs against it, then it is stopped.
Prints one line per command and a summary; exit 1 if any failed.

  python3 tests/readme/readme_commands.py [--list] [--only REGEX] [--timeout S]
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

START = re.compile(r"^(\./build/|build/|make |PYTHONPATH=|\.cache/|/usr/bin/python3 |python3? |bash |cmake |"
                   r"\.venv/|grep |infer |fusert-)")

# (regex, action, reason). First match wins; no match: run.
RULES = [
    (r"^infer \[", "skip", "the usage synopsis, not a command"),
    (r"^make (run|test)\b", "skip", "the quick start itself (CI ran it just before)"),
    (r"^make (build|sanitize|tsan|fuzz|fuzz-planner)\b", "skip",
     "a build or a long sanitizer/fuzz run of its own (make build is part of make run; the others run "
     "by hand, CI runs make fuzz-planner N=500)"),
    (r"^cmake --install", "skip", "writes into $HOME; ctest install_consumer installs into a temporary prefix"),
    (r"pip install \.|^\.venv/bin/python", "skip",
     "the wheel build takes 6 minutes; ctest python_api tests the same module from build/python"),
    (r"^python -m fusert\.serve", "skip", "the pip-installed variant of the make serve line above"),
    (r"fuzz_planner --graphs 100000", "skip", "100,000 graphs; make test runs its 500-graph slice"),
    (r"test_bitshift_left_uint8", "unsupported", "an example of the error for an op fusert does not run"),
    (r"--device cuda", "gpu", ""),
    (r"bf16", "bf16", ""),
    (r"^make serve\b", "serve", ""),
]

NO_GPU = re.compile(r"no CUDA device|no NVIDIA GPU|CUDA driver|cudaErrorNoDevice|no GPU", re.I)
# What a command may fail with, where the machine lacks what it needs (the README says so).
REFUSALS = {"gpu": (NO_GPU, "no GPU"), "bf16": (re.compile(r"no native bf16"), "no native bf16 on this CPU"),
            "unsupported": (re.compile(r"unsupported by fusert:\s+op types"), "the error it shows")}


def commands(readme):
    """(line number, command) of every command in README.md's code blocks."""
    out, in_block, pending = [], False, None
    lines = open(readme, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            in_block = not in_block
            i += 1
            continue
        s = line.strip()
        if s.startswith("$ "):
            s = s[2:]
        if in_block and START.match(s):
            start, cmd = i + 1, s
            while cmd.endswith("\\") and i + 1 < len(lines):  # continuation lines
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            if cmd.count('"') % 2 == 1:  # a multi-line -c "..." program
                while i + 1 < len(lines):
                    i += 1
                    cmd += "\n" + lines[i]
                    if cmd.count('"') % 2 == 0:
                        break
            out.append((start, cmd))
        i += 1
    return out


def rule(cmd):
    for pattern, action, reason in RULES:
        if re.search(pattern, cmd):
            return action, reason
    return "run", ""


def run(cmd, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr, time.time() - t0
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n(timed out after {timeout} s)", time.time() - t0


def serve(cmd, client, timeout):
    """Starts the server, waits for /metadata, runs the client, stops the server."""
    t0 = time.time()
    srv = subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        while time.time() - t0 < timeout:
            if srv.poll() is not None:
                return 1, f"the server exited ({srv.returncode}) before answering:\n{srv.stdout.read()[-3000:]}", 0
            try:
                urllib.request.urlopen("http://127.0.0.1:8000/metadata", timeout=2).read()
                break
            except OSError:
                time.sleep(2)
        else:
            return 124, f"no answer on 127.0.0.1:8000 within {timeout} s", time.time() - t0
        if client is None:
            return 0, "", time.time() - t0
        rc, out, _ = run(client, 120)
        return rc, out, time.time() - t0
    finally:
        os.killpg(srv.pid, signal.SIGINT)
        try:
            srv.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(srv.pid, signal.SIGKILL)
        subprocess.run(["bash", "-c", ".cache/serve-venv/bin/ray stop --force >/dev/null 2>&1 || true"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the commands and their rule, run nothing")
    ap.add_argument("--only", help="run only the commands matching this regex")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command (default 600)")
    a = ap.parse_args()
    os.chdir(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    cmds = commands("README.md")
    failed, counts = [], {"ok": 0, "skip": 0, "failed": 0}
    consumed = set()  # client blocks run by their server
    for k, (ln, cmd) in enumerate(cmds):
        if k in consumed or (a.only and not re.search(a.only, cmd)):
            continue
        action, reason = rule(cmd)
        head = cmd.split("\n")[0][:110]
        if a.list:
            print(f"README.md:{ln}: [{action}] {head}")
            continue
        if action == "skip":
            counts["skip"] += 1
            print(f"[readme] skip  README.md:{ln}: {head}\n               ({reason})", flush=True)
            continue
        if action == "serve":
            client = None
            for j in range(k + 1, len(cmds)):  # the next command that talks to the server
                if "127.0.0.1:8000" in cmds[j][1]:
                    client = cmds[j][1]
                    consumed.add(j)
                    break
            rc, out, secs = serve(cmd, client, a.timeout)
        else:
            rc, out, secs = run(cmd, a.timeout)
        refusal = REFUSALS.get(action)
        ok = rc == 0 or (refusal is not None and rc != 0 and refusal[0].search(out) is not None)
        counts["ok" if ok else "failed"] += 1
        note = f" ({refusal[1]}: the documented error)" if ok and rc != 0 else ""
        print(f"[readme] {'ok   ' if ok else 'FAIL '} README.md:{ln}: {head} ({secs:.1f} s){note}", flush=True)
        if not ok:
            failed.append((ln, cmd, rc, out))
    if a.list:
        return 0
    for ln, cmd, rc, out in failed:
        print(f"\n[readme] README.md:{ln} exited {rc}:\n$ {cmd}\n{out[-4000:]}")
    print(f"[readme] {counts['ok']} ok, {counts['failed']} failed, {counts['skip']} skipped (reasons above)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
