#!/usr/bin/env bash
# Installs the Debian packages fusert builds and tests with, only those missing. Idempotent.
# With --bench also what `make bench` needs from Debian (tools/setup_bench.sh adds the PyPI part).
set -euo pipefail
# libdnnl-dev: oneDNN, the CPU anchor library. Its CMake package (Debian's build also has a GPU
# runtime) requires OpenCL to be found, hence ocl-icd-opencl-dev, only a "Recommends" of it.
pkgs=(build-essential cmake pkg-config doxygen libeigen3-dev libyaml-cpp-dev doctest-dev nlohmann-json3-dev
      libpng-dev libjpeg62-turbo-dev libutf8proc-dev libdnnl-dev ocl-icd-opencl-dev
      libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata python3 python3-dev python3-pip python3-venv
      ca-certificates
      python3-torch python3-torchvision python3-numpy python3-pil)
# python3-torch/-torchvision (Debian's PyTorch 1.13, torchvision 0.14) export the torchvision
# families the ONNX tests import (tools/torchvision_onnx.py); the goldens are made with them too.
# python3-dev: the headers the Python module (python/, FUSERT_PYTHON) builds against.
if [ "${1:-}" = "--bench" ]; then
  # matplotlib plots.
  pkgs+=(python3-matplotlib)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all Debian packages present"
  exit 0
fi
echo "[deps] installing: ${missing[*]}"
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then SUDO=sudo; else
    echo "[deps] error: not root; run: apt-get install -y ${missing[*]}" >&2; exit 1
  fi
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "[deps] done"
