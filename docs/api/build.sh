#!/usr/bin/env bash
# Builds the public API's Doxygen HTML into OUT (default build/api-docs); fails on any warning.
#   docs/api/build.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/api-docs}
mkdir -p "$out"
command -v doxygen >/dev/null || { echo "doxygen not found (apt-get install doxygen; make deps installs it)" >&2; exit 1; }
(cat docs/api/Doxyfile; echo "OUTPUT_DIRECTORY = $out") | doxygen - 
echo "[api-docs] $out/html/index.html"
