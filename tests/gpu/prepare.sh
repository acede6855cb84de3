#!/usr/bin/env bash
# tests/gpu/prepare.sh: builds, on this (GPU-less) development machine, everything
# tests/gpu/run.sh needs on the lent GPU machine, and stages it in ONE folder to carry.
#
#   bash tests/gpu/prepare.sh [STAGE]        (STAGE default build-gpu)
#
# The lent machine has nvcc, CMake and PyTorch but no Eigen, yaml-cpp, nlohmann-json, doctest or
# libpng/libjpeg headers, and nothing can be installed there, so fusert cannot be built there: it is built
# here and carried (the `run` tool's `carry`, 64 MiB for everything). Layout:
#   build-gpu-tree/        the CMake build tree (Release, CUDA on, BUILD_TESTING=ON): objects,
#                          not carried (FUSERT_GPU_TREE overrides the path)
#   STAGE/bin/             infer, bench, fusert-zoo, test_cuda (stripped if the stage would exceed 60 MiB)
#   STAGE/lib/             the non-system shared libraries they need that the GPU machine lacks
#                          (from ldd: libyaml-cpp, libutf8proc, libpng, libjpeg, libgomp; never the CUDA libraries,
#                          which run.sh finds there)
#   STAGE/pylib/           efficientnet_lite_pytorch (pure Python, from .cache/pylib) for
#                          tools/torch_bench.py, when present here
#   STAGE/onnx/            small real ONNX models (make onnx-models) and shapes.txt (name, --shape)
#   STAGE/kernel-cache/    fusert's NVRTC kernel cache, warmed here (compiling needs no GPU) so
#                          the device run does not spend its minutes compiling
#   STAGE/manifest.txt     source_dir (the FUSERT_SOURCE_DIR baked into the binaries), git
#                          revision, compiler and library versions, ldd output, sizes
# Then: the `run` tool with command `bash tests/gpu/run.sh`, carry ["build-gpu"], timeout_s 540.
# Exit status: 0 staged and under the size limit, 1 otherwise.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
STAGE=${1:-build-gpu}
STAGE_ARG=$STAGE   # as given (relative): what `carry` names
TREE=${FUSERT_GPU_TREE:-build-gpu-tree}
JOBS=${JOBS:-$(nproc)}
LIMIT_MIB=60
LOGS=$TREE/prepare-logs
ZOO=(resnet18 resnet50 mobilenet_v2 efficientnet_lite0 bert_base_layer minilm_l6 transformer_block
     multitask_heads branch_merge)

say() { printf 'prepare: %s\n' "$*"; }
die() { printf 'prepare: error: %s\n' "$*" >&2; exit 1; }
size_mib() { du -sm "$1" | cut -f1; }

# Both folders must be git-ignored: the stage travels only through `carry`, the tree never.
for d in "$STAGE" "$TREE"; do
  git check-ignore -q "$d/x" 2>/dev/null || die "$d/ is not git-ignored (it would travel with the working tree)"
done

mkdir -p "$STAGE" "$LOGS"
STAGE=$(cd "$STAGE" && pwd)

# ---- 1. configure and build (Release, CUDA on: fails here if nvcc or cuDNN is missing)
NVCC=${CUDACXX:-/usr/local/cuda/bin/nvcc}
[[ -x $NVCC ]] || die "no nvcc at $NVCC (set CUDACXX): the CUDA backend cannot be built"
GEN=()
if [[ ! -f $TREE/CMakeCache.txt ]] && command -v ninja >/dev/null; then GEN=(-G Ninja); fi
say "configuring $TREE (Release, FUSERT_CUDA=ON, FUSERT_ONEDNN=OFF, BUILD_TESTING=ON)"
# Without oneDNN: its library alone (38 MiB) would not fit the 64 MiB carry, and the CUDA checks
# compare against the CPU reference kernels, which is what --compare-cpu should use anyway.
cmake -S . -B "$TREE" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DFUSERT_CUDA=ON -DFUSERT_ONEDNN=OFF -DBUILD_TESTING=ON \
      -DCMAKE_CUDA_COMPILER="$NVCC" >"$LOGS/configure.log" 2>&1 \
  || { tail -30 "$LOGS/configure.log"; die "cmake configure failed (log: $LOGS/configure.log)"; }
grep -E '^-- fusert:' "$LOGS/configure.log" || true

targets=(infer bench fusert-zoo)
if cmake --build "$TREE" --target help 2>/dev/null | grep -qE '(^|[ .:])test_cuda(:|$| )'; then
  targets+=(test_cuda)
else
  say "warning: no test_cuda target (tests/cuda missing or CUDA off): run.sh will report it missing"
fi
say "building ${targets[*]} with $JOBS jobs (log: $LOGS/build.log)"
start=$SECONDS
cmake --build "$TREE" --target "${targets[@]}" -j "$JOBS" >"$LOGS/build.log" 2>&1 \
  || { grep -E 'error|Error' "$LOGS/build.log" | head -40; die "build failed (log: $LOGS/build.log)"; }
say "built in $((SECONDS - start)) s"

# ---- 2. stage binaries
rm -rf "${STAGE:?}/bin" "${STAGE:?}/lib" "${STAGE:?}/pylib" "${STAGE:?}/kernel-cache" "${STAGE:?}/manifest.txt"
mkdir -p "$STAGE/bin" "$STAGE/lib"
for t in "${targets[@]}"; do
  f=$(find "$TREE" -maxdepth 3 -type f -name "$t" -perm -u+x | head -1)
  [[ -n $f ]] || die "built target $t not found under $TREE"
  cp "$f" "$STAGE/bin/$t"
done

# ---- 3. shared libraries the binaries need, except the C/C++ runtime every Linux has and the
# CUDA libraries (cuBLAS, cuBLASLt, cuDNN, NVRTC, nvJitLink, the driver) that run.sh finds there.
is_system() {
  case $1 in
    linux-vdso*|ld-linux*|libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|libstdc++.so*|libgcc_s.so*) return 0 ;;
    libcublas*|libcudnn*|libnvrtc*|libnvJitLink*|libcuda.so*|libcudart*|libnvidia*) return 0 ;;
  esac
  return 1
}
for b in "$STAGE"/bin/*; do
  ldd "$b" | awk '/=>/ {print $1, $3}' | while read -r name path; do
    is_system "$name" && continue
    [[ -f $path ]] || die "$b needs $name, which ldd cannot find here"
    [[ -f $STAGE/lib/$name ]] || cp -L "$path" "$STAGE/lib/$name"
  done
done
say "carried libraries: $(find "$STAGE/lib" -type f -printf '%f ')"

# ---- 4. efficientnet_lite_pytorch for tools/torch_bench.py (the GPU machine's pip has no network)
if [[ -d .cache/pylib/efficientnet_lite_pytorch ]]; then
  mkdir -p "$STAGE/pylib"
  cp -r .cache/pylib/efficientnet_lite_pytorch "$STAGE/pylib/"
  rm -rf "$STAGE/pylib/efficientnet_lite_pytorch/__pycache__"
else
  say "note: .cache/pylib/efficientnet_lite_pytorch missing (/usr/bin/python3 tools/make_goldens.py --only" \
      "efficientnet_lite0 installs it): torch_bench will skip efficientnet_lite0"
fi

# ---- 4b. real ONNX models of the real-model set (make onnx-models), the small ones that fit the
# carry limit, with the shape binding infer needs: STAGE/onnx/<name>.onnx and STAGE/onnx/shapes.txt
rm -rf "${STAGE:?}/onnx"
mkdir -p "$STAGE/onnx"
: >"$STAGE/onnx/shapes.txt"
for spec in "ppocr_det onnx-models/ch_PP-OCRv4_det_infer.onnx x=1x3x640x640" \
            "ppocr_cls onnx-models/ch_ppocr_mobile_v2.0_cls_infer.onnx x=1x3x48x192" \
            "tv_vit_tiny torchvision-onnx/vit_tiny.onnx input=1x3x224x224" \
            "tv_shufflenet_v2_x0_5 torchvision-onnx/shufflenet_v2_x0_5.onnx input=1x3x224x224" \
            "tv_squeezenet1_1 torchvision-onnx/squeezenet1_1.onnx input=1x3x224x224"; do
  read -r name file shape <<<"$spec"
  if [[ -f .cache/$file ]]; then
    cp ".cache/$file" "$STAGE/onnx/$name.onnx"
    echo "$name $shape" >>"$STAGE/onnx/shapes.txt"
  else
    say "note: .cache/$file missing (make onnx-models): $name is not staged"
  fi
done
say "real ONNX models staged: $(wc -l <"$STAGE/onnx/shapes.txt") ($(size_mib "$STAGE/onnx") MiB)"

# ---- 5. warm the kernel cache: `infer --device cuda --explain` plans and compiles every generated
# kernel (NVRTC + nvJitLink need no GPU); the cache key includes the toolkit version, and run.sh
# puts /usr/local/cuda/lib64 (CUDA 13.0 there, as here) first on the library path.
mkdir -p "$STAGE/kernel-cache"
warm_ok=0 warm_fail=0
for m in "${ZOO[@]}"; do
  for mode in "--fusion none" "--fusion all" "--fusion all --tf32"; do
    # shellcheck disable=SC2086
    if FUSERT_CACHE_DIR="$STAGE/kernel-cache" timeout 600 "$STAGE/bin/infer" --model "models/$m.yaml" \
         --seeded --device cuda $mode --explain >"$LOGS/warm.$m.log" 2>&1; then
      warm_ok=$((warm_ok + 1))
    else
      warm_fail=$((warm_fail + 1))
      if ((warm_fail == 1)); then say "kernel-cache warm-up: $m $mode: $(tail -1 "$LOGS/warm.$m.log")"; fi
    fi
  done
done
while read -r name shape; do
  for mode in none all; do
    FUSERT_CACHE_DIR="$STAGE/kernel-cache" timeout 600 "$STAGE/bin/infer" --model "$STAGE/onnx/$name.onnx" \
      --shape "$shape" --device cuda --fusion "$mode" --explain >"$LOGS/warm.$name.$mode.log" 2>&1 || true
  done
done <"$STAGE/onnx/shapes.txt"
nk=$(find "$STAGE/kernel-cache" -type f | wc -l)
# Without a GPU, infer may stop at the device after compiling: what it compiled is cached anyway.
say "kernel cache: $nk files, $(size_mib "$STAGE/kernel-cache") MiB (infer exited 0 on $warm_ok of" \
    "$((warm_ok + warm_fail)) plans; the others stopped after compiling, at the missing device, or earlier)"
[[ $nk -gt 0 ]] || say "note: nothing cached: the device run compiles every kernel itself (slower first runs)"

# ---- 6. size: strip if needed, then the limit
total=$(size_mib "$STAGE")
if (( total > LIMIT_MIB )); then
  say "stage is $total MiB > $LIMIT_MIB MiB: stripping binaries"
  strip --strip-unneeded "$STAGE"/bin/* "$STAGE"/lib/*
  total=$(size_mib "$STAGE")
fi

# ---- 7. manifest (run.sh reads source_dir=)
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$TREE/CMakeCache.txt")
{
  echo "source_dir=$src"
  echo "git_revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "git_uncommitted_files=$(git status --porcelain 2>/dev/null | wc -l)"
  echo "prepared=$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm)"
  echo "targets=${targets[*]}"
  echo "kernel_cache_files=$nk"
  grep -E '^(CMAKE_BUILD_TYPE|FUSERT_CUDA|FUSERT_AVX2|CMAKE_CXX_COMPILER|CMAKE_CUDA_COMPILER):' \
    "$TREE/CMakeCache.txt" || true
  # the nvcc target flags fusert's own CUDA sources get (not CMake's compiler probes)
  echo "cuda_targets=$(cat "$TREE/build.ninja" "$TREE"/CMakeFiles/fusert.dir/flags.make 2>/dev/null \
    | grep -oE -- '--generate-code=[^ ]+|-arch[= ]sm_[0-9a-z]+' | sort -u | tr '\n' ' ')"
  echo "--- nvcc"; "$NVCC" --version | tail -2
  echo "--- files"; (cd "$STAGE" && find . -type f \( -path './bin/*' -o -path './lib/*' \) -exec ls -l {} +)
  for b in "$STAGE"/bin/*; do echo "--- ldd $(basename "$b") (here)"; ldd "$b"; done
} >"$STAGE/manifest.txt"

say "staged $STAGE_ARG/: $total MiB (limit $LIMIT_MIB MiB; the working tree travels too, ~$(( $(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1) / 1048576 )) MiB)"
(( total <= LIMIT_MIB )) || die "$STAGE is $total MiB, over $LIMIT_MIB MiB"

# ---- 8. the device script's own checks, here
bash -n tests/gpu/run.sh
bash tests/gpu/run.sh --dry-run --build "$STAGE" >"$LOGS/dry-run.log" 2>&1 \
  || { tail -20 "$LOGS/dry-run.log"; die "tests/gpu/run.sh --dry-run failed"; }
say "run.sh --dry-run ok. Next, on the GPU machine: run(command=\"bash tests/gpu/run.sh\"," \
    "carry=[\"$STAGE_ARG\"], timeout_s=540)"
