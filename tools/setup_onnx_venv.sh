#!/usr/bin/env bash
# The Python side of the ONNX tests (tests/onnx, ctest onnx_real_models) and of the Python
# package (python/, ctest python_api): a small virtual environment .cache/onnx-venv with ONNX
# Runtime (the reference engine), numpy, Pillow, the onnx package (onnx.helper builds
# tools/ort_cases.py's models), nanobind (the module's bindings), pytest and ml_dtypes (ONNX Runtime's
# quantisation tools, tools/quantize.py) from PyPI, pinned. Idempotent; prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.cache/onnx-venv
PKGS=(onnxruntime==1.32.0 "numpy<2" pillow==10.4.0 onnx==1.17.0 nanobind==3.1.0 pytest==9.2.0
  ml_dtypes==0.5.1)
if ! "$VENV/bin/python" -c "import onnxruntime, numpy, PIL, onnx.helper, nanobind, pytest, ml_dtypes" 2>/dev/null; then
  echo "[onnx] creating $VENV (${PKGS[*]} from PyPI)" >&2
  rm -rf "$VENV"
  /usr/bin/python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "${PKGS[@]}" >&2
fi
echo "$VENV/bin/python"
