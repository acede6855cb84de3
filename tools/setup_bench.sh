#!/usr/bin/env bash
# What `make bench` needs beyond the build: Debian's python3-torch/torchvision/matplotlib/numpy
# (tools/setup_deps.sh --bench) and a virtual environment .cache/bench-venv that sees them
# (--system-site-packages) and adds ONNX Runtime, OpenVINO and onnx from PyPI, pinned. numpy stays Debian's
# 1.x: Debian's torch and matplotlib are built against it. Idempotent; prints the venv's python.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_deps.sh --bench >&2
VENV=.cache/bench-venv
ORT=onnxruntime==1.32.0
ONNX=onnx==1.23.2
OV=openvino==2026.4.1  # the other CPU runtime users pick (tools/ov_worker.py)
TQDM=tqdm==4.66.4  # imported by transformers 4.40.2 (the BERT builders, .cache/pylib)
if ! "$VENV/bin/python" -c "import onnxruntime, onnx, openvino, tqdm, torch, matplotlib" 2>/dev/null; then
  echo "[bench] creating $VENV ($ORT, $OV, $ONNX, $TQDM from PyPI)" >&2
  rm -rf "$VENV"
  /usr/bin/python3 -m venv --system-site-packages "$VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check "$ORT" "$OV" "$ONNX" "$TQDM" "numpy<2" >&2
fi
echo "$VENV/bin/python"
