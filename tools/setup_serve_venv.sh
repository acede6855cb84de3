#!/usr/bin/env bash
# The serving side of the Python package (python/fusert/serve.py, tools/serve_load.py, ctest
# serve_quick): a virtual environment .cache/serve-venv with Ray Serve and numpy from PyPI, pinned,
# from Debian's python3 (the ABI the module in build/python is built for). fusert itself comes from
# the build tree (PYTHONPATH=build/python) or from `pip install .`. Idempotent; prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.cache/serve-venv
PKGS=("ray[serve]==2.60.0" "numpy<2")
if ! "$VENV/bin/python" -c "import ray, ray.serve, numpy, starlette" 2>/dev/null; then
  echo "[serve] creating $VENV (${PKGS[*]} from PyPI)" >&2
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PKGS[@]}" >&2
fi
echo "$VENV/bin/python"
