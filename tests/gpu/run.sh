#!/usr/bin/env bash
# tests/gpu/run.sh: every GPU check of fusert in one call on the lent GPU machine (one H200).
#
#   bash tests/gpu/run.sh [--quick] [--dry-run] [--build DIR] [--models M,M] [--jobs N] [--budget S]
#                         [--seed N]
#   bash tests/gpu/run.sh --summary-only DIR     (re-print the table from an unpacked logs.tar.gz)
#
# Needs the build staged by tests/gpu/prepare.sh on the development machine and carried
# (the `run` tool: command "bash tests/gpu/run.sh", carry ["build-gpu"], timeout_s 540).
# Phases, each command under its own `timeout`; a failing step is recorded and the script goes on:
#   0. setup: nvidia-smi -L, CUDA libraries (cuBLAS, cuBLASLt, cuDNN, NVRTC, nvJitLink) found in
#      /usr/local/cuda/lib64 and PyTorch's site-packages/nvidia/*/lib -> LD_LIBRARY_PATH (for
#      fusert's commands only, not for PyTorch's), ldd of infer (missing libraries flagged)
#   1. correctness: test_cuda; per zoo model `infer --device cuda --seeded --compare-cpu` with
#      --fusion none, --fusion all, --fusion all --tf32, and --fusion all --batch 5 --runs 3 (a
#      shape other than the plan's: its own instance and CUDA Graph) (several at once: --jobs),
#      each on its own seed (weights and inputs: --seed N..N+3; N from the clock unless given);
#      a failing one runs again with FUSERT_CUDA_SYNC_STEPS=1 to name a faulting step
#   1b. the real ONNX models prepare.sh carried (BUILD/onnx): CUDA vs CPU, fusion none and all, with
#      their kernels and host-fallback steps (stats JSON)
#   2. bad inputs on cuda: missing model file, malformed YAML, wrong-shape .npy -> exit 1 + message;
#      then the zoo's CUDA rows (fusert-zoo --device cuda on the seeded models of models/zoo.yaml,
#      fusion none and all, against their PyTorch goldens; JUnit/JSON into the logs)
#   3. timing: per model `infer --device cuda --seeded --runs 200 --warmup 20 --stats-json`,
#      CUDA Graph on and off (--no-cuda-graph)
#   4. PyTorch: tools/torch_bench.py eager on every model + device-to-device copy bandwidth, then
#      torch.compile on a few models (each capped; see COMPILE_MODELS)
#   5. while the budget lasts: bench --device cuda (fused vs unfused, side by side; informative)
#   6. one table: model | cpu check | fusert ms (graph) | (no graph) | eager ms | compile ms |
#      kernels | achieved GB/s | % of copy bandwidth
# Files under $OUT (default ./gpu-out): run.log (this output), summary.txt (the table and the
# failures), results.jsonl (one JSON object per check / timing / torch row), logs.tar.gz (every
# step's log, stats JSON and torch output). Exit status: 0 when every correctness check passed
# (test_cuda, compare-cpu, bad inputs, and fusert's timing runs not crashing), 1 otherwise, 2 for
# a bad command line. Budget: everything ends within --budget seconds (default 440, < 8 min):
# steps are cut short or skipped (and reported) when it runs out; correctness runs first.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$REPO"
SELF=$REPO/tests/gpu/run.sh

ZOO=(resnet18 resnet50 mobilenet_v2 efficientnet_lite0 bert_base_layer minilm_l6 transformer_block
     multitask_heads branch_merge)

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$SELF"; }

# ---- options
DRY=0 QUICK=0 BUILD=build-gpu MODELS_ARG="" JOBS=4 BUDGET=440 SUMMARY_ONLY=""
SEED=$(( $(date +%s) % 100000 ))   # fresh weights and inputs for the CUDA-vs-CPU checks
while (($#)); do
  case $1 in
    --dry-run) DRY=1 ;;
    --quick) QUICK=1 ;;
    --build) BUILD=${2:?--build needs a folder}; shift ;;
    --models) MODELS_ARG=${2:?--models needs a list}; shift ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift ;;
    --budget) BUDGET=${2:?--budget needs seconds}; shift ;;
    --seed) SEED=${2:?--seed needs a number}; shift ;;
    --summary-only) SUMMARY_ONLY=${2:?--summary-only needs a folder}; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -n $MODELS_ARG ]]; then
  IFS=, read -r -a MODELS <<<"$MODELS_ARG"
  for m in "${MODELS[@]}"; do
    [[ -f models/$m.yaml ]] || { echo "run.sh: --models: no models/$m.yaml" >&2; exit 2; }
  done
else
  MODELS=("${ZOO[@]}")
fi

# Runs and caps. torch.compile is slow on a cold cache (tens of seconds per model): only a few
# models, each capped, and only while the budget lasts.
if ((QUICK)); then
  RUNS=50 WARMUP=5 COMPILE_MODELS=(resnet18 transformer_block) COMPILE_TIMEOUT=45 BENCH_RUNS=10
else
  RUNS=200 WARMUP=20 COMPILE_MODELS=(resnet18 mobilenet_v2 transformer_block bert_base_layer) COMPILE_TIMEOUT=60
  BENCH_RUNS=20
fi
CAP_TEST_CUDA=150 CAP_COMPARE=90 CAP_BAD=30 CAP_TIMING=60 CAP_TORCH_EAGER=180 CAP_ZOO=120
RESERVE=15   # seconds kept for the summary and the log archive

# ---- where things go
if [[ -n $SUMMARY_ONLY ]]; then
  :   # re-prints the table of an earlier run's folder (below); writes only DIR/summary.txt, results.jsonl
elif ((DRY)); then
  OUT=${OUT:-$REPO/gpu-out}
  WORK=/tmp/fusert-gpu.DRYRUN    # printed only: a dry run writes nothing
else
  OUT=${OUT:-$REPO/gpu-out}
  mkdir -p "$OUT"
  WORK=$(mktemp -d /tmp/fusert-gpu.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT   # what matters is archived into $OUT after every phase
  mkdir -p "$WORK"/{logs,results,timing,torch,dump,fx}
  : >"$OUT/run.log"
  exec 3>&1 4>&2
  exec > >(tee -a "$OUT/run.log") 2>&1
  TEE_PID=$!
fi
[[ $BUILD = /* ]] || BUILD=$REPO/$BUILD

now() { echo "${EPOCHREALTIME:-$(date +%s.%N)}"; }
left() { echo $((BUDGET - SECONDS)); }
q() { printf '%q ' "$@"; }
section() { printf '\n=== %s (t=%ds, %ds left)\n' "$*" "$SECONDS" "$(left)"; }

# record CLASS NAME RC SECONDS NOTE: one line per step into WORK/results (CLASS correct|timing|torch)
record() {
  ((DRY)) && return 0
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >"$WORK/results/$2.tsv"
}

# run_step CLASS NAME CAP CMD...: CMD under `timeout` (at most CAP s and what the budget leaves),
# stdout+stderr to WORK/logs/NAME.log. With EXPECT_RE set, the log must also match it (an exit
# status of 0 alone proves nothing); with FAIL_RE, it must not; with EXPECT_FILE, that file must
# have been written. Prints one line when done.
run_step() {
  local class=$1 name=$2 cap=$3
  shift 3
  if ((DRY)); then
    printf '  [%s] timeout %s %s\n' "$name" "$cap" "$(q "$@")"
    return 0
  fi
  local t=$(( $(left) - RESERVE ))
  ((t > cap)) && t=$cap
  if ((t < 5)); then
    # a correctness check not run is not passed; a timing run not run is only missing
    [[ $class == timing ]] && class=timing_skipped
    record "$class" "$name" 125 0 "skipped: time budget used up"
    printf '  [SKIP] %-34s time budget used up\n' "$name"
    return 125
  fi
  local log=$WORK/logs/$name.log t0 rc=0 dt note=""
  t0=$(now)
  timeout -k 5 "$t" "$@" >"$log" 2>&1 </dev/null || rc=$?
  dt=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  if ((rc == 124 || rc == 137)); then
    note="TIMEOUT after ${t}s"
  elif ((rc == 0)) && [[ -n ${EXPECT_RE:-} ]] && ! grep -Eq -- "$EXPECT_RE" "$log"; then
    rc=3 note="exit 0 but no line matches /$EXPECT_RE/"
  elif ((rc == 0)) && [[ -n ${FAIL_RE:-} ]] && grep -Eq -- "$FAIL_RE" "$log"; then
    rc=3 note="exit 0 but: $(grep -Em1 -- "$FAIL_RE" "$log")"
  elif ((rc == 0)) && [[ -n ${EXPECT_FILE:-} && ! -s ${EXPECT_FILE:-} ]]; then
    rc=3 note="exit 0 but $EXPECT_FILE was not written"
  fi
  if [[ -z $note ]]; then
    # the informative line: the comparison, the doctest summary, else the last line
    note=$( (grep -Em1 'cuda vs cpu:|test cases:|^latency' "$log" || tail -n1 "$log") | tr '\t' ' ' | cut -c1-160)
  fi
  record "$class" "$name" "$rc" "$dt" "$note"
  printf '  [%s] %-34s %6ss  %s\n' "$( ((rc == 0)) && echo ' ok ' || echo FAIL)" "$name" "$dt" "$note"
  return "$rc"
}

# pool_step: run_step in the background, at most JOBS at once (correctness runs only: timing
# runs are sequential so they do not share the GPU).
pool_step() {
  if ((DRY)); then run_step "$@"; return 0; fi
  while (($(jobs -rp | wc -l) >= JOBS)); do wait -n 2>/dev/null || true; done
  run_step "$@" &
}
# (the jobs by pid: a bare `wait` would also wait for the tee behind this script's output)
pool_wait() {
  local p
  for p in $(jobs -p); do wait "$p" 2>/dev/null || true; done
}

# Archive WORK into OUT/logs.tar.gz (after every phase, so a run cut short keeps its logs).
snapshot() {
  ((DRY)) && return 0
  if tar -czf "$OUT/logs.tar.gz.tmp" -C "$WORK" --exclude=kernel-cache . 2>/dev/null; then
    mv "$OUT/logs.tar.gz.tmp" "$OUT/logs.tar.gz"
  fi
}

# ---- the table (python3, stdlib only): reads WORK, prints the table, writes summary + results
summarise() {
  local work=$1
  python3 - "$work" "${MODELS[*]}" "${COMPILE_MODELS[*]}" "$COMPILE_TIMEOUT" "$RUNS" <<'PY'
import glob, json, os, re, sys, textwrap
work, models, compiled, ctimeout, runs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4], sys.argv[5]
rows = {}
for f in sorted(glob.glob(os.path.join(work, "results", "*.tsv"))):
    for line in open(f, encoding="utf-8", errors="replace"):
        p = line.rstrip("\n").split("\t")
        if len(p) >= 5:
            rows[p[1]] = {"class": p[0], "name": p[1], "rc": int(p[2]), "seconds": p[3], "note": p[4]}

def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

# eager.jsonl: every model's eager row and the copy bandwidth; compile.M.jsonl: M's compile
# fields (its eager numbers fill in only where the eager run gave none).
torch_rows, copy = {}, None
files = glob.glob(os.path.join(work, "torch", "eager.jsonl")) + sorted(glob.glob(os.path.join(work, "torch", "compile.*.jsonl")))
for f in files:
    for line in open(f):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("copy_bandwidth"):
            copy = r
        elif "model" in r:
            old = torch_rows.setdefault(r["model"], {})
            if not os.path.basename(f).startswith("compile."):
                old.update(r)
            else:
                for k, v in r.items():
                    if k.startswith("compile") or k not in old or old.get("status") != "ok":
                        old[k] = v

def io_bytes(model):
    """inputs + outputs of the YAML graph, from `infer --dump` (f32 4 bytes, i64 8 bytes)."""
    try:
        text = open(os.path.join(work, "dump", model + ".txt")).read()
    except OSError:
        return None
    total = 0
    for kind, dims, dt in re.findall(r"^  (input|output) +\S+\[([0-9, ]*)\] ?(\w*)", text, re.M):
        n = 1
        for d in dims.split(","):
            if d.strip():
                n *= int(d)
        total += n * (8 if dt in ("i64", "f64") else 4)
    return total

def check(model):
    out = []
    for mode in ("none", "all", "tf32"):
        r = rows.get(f"cuda_{model}_{mode}")
        out.append("-" if r is None else ("ok" if r["rc"] == 0 else ("t/o" if r["rc"] in (124, 137) else "FAIL")))
    return "/".join(out)

def ms(v):
    return "n/a" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.2f}")

copy_gbps = copy.get("gbps_rw") if copy else None
head = ["model", "cpu check", "fusert ms", "(no graph)", "eager ms", "compile ms", "kernels", "GB/s", "% copy"]
table, results = [], []
for m in models:
    g = load(os.path.join(work, "timing", f"{m}.graph.json")) or {}
    n = load(os.path.join(work, "timing", f"{m}.nograph.json")) or {}
    t = torch_rows.get(m, {})
    lat = (g.get("latency_ms") or {}).get("median")
    lat_ng = (n.get("latency_ms") or {}).get("median")
    io = io_bytes(m)
    moved = None
    if lat and "weight_bytes" in g and "intermediate_bytes" in g and io is not None:
        moved = g["weight_bytes"] + g["intermediate_bytes"] + io
    gbps = moved / (lat * 1e-3) / 1e9 if moved and lat else None
    cs = t.get("compile_status", "")
    if t.get("status") == "skipped":
        eager, comp = "skip", "skip"
    else:
        eager = ms(t.get("eager_ms")) if t else "n/a"
        comp = (ms(t.get("compile_ms")) if cs == "ok" else "t/o" if cs.startswith("timeout")
                else "err" if cs.startswith("error") else "-")
    k = g.get("kernels")
    kern = "n/a" if k is None else str(k)
    if g.get("host_fallback_steps"):
        kern += f" h{g['host_fallback_steps']}"
    if g and not g.get("cuda_graph", True):
        lat_note = "*"
    else:
        lat_note = ""
    table.append([m, check(m), ms(lat) + lat_note, ms(lat_ng), eager, comp, kern,
                  "n/a" if gbps is None else f"{gbps:.0f}",
                  "n/a" if gbps is None or not copy_gbps else f"{100 * gbps / copy_gbps:.1f}"])
    results.append({"model": m, "fusert_graph": g, "fusert_nograph": n, "torch": t, "io_bytes": io,
                    "bytes_moved": moved, "achieved_gbps": gbps, "copy_gbps_rw": copy_gbps})

widths = [max(len(str(r[i])) for r in [head] + table) for i in range(len(head))]
lines = ["  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
         for r in [head] + table]
lines.insert(1, "  ".join("-" * w for w in widths))
notes = [
    f"fusert: infer --device cuda --seeded --fusion all, median of {runs} runs (CUDA events around the plan, "
    "no host<->device copies); '(no graph)' with --no-cuda-graph; '*' = the graph run did not use a CUDA Graph.",
    "cpu check: --compare-cpu with --fusion none / all / all --tf32 (bounds 1e-5 fp32, 1e-2 tf32).",
    f"eager / compile: tools/torch_bench.py, PyTorch fp32 (TF32 off), same seeded weights and inputs, median of "
    f"{runs}; torch.compile (mode default) only for {', '.join(compiled) or 'none'}, each capped at {ctimeout} s "
    "('-' = not compiled, 't/o' = over the cap, 'err' = failed, 'skip' = model not buildable in PyTorch here).",
    "kernels: fusert launches per inference (' hN' = N host fallback steps). GB/s = (weight_bytes + "
    "intermediate_bytes + input/output bytes) / fusert graph median; % copy = that over the device-to-device "
    "copy bandwidth (read + write bytes of a 1 GiB copy, median of 20)"
    + (f": {copy_gbps:.0f} GB/s." if copy_gbps else ": not measured."),
]
fails = [r for r in rows.values() if r["class"] in ("correct", "timing") and r["rc"] != 0]
other = [r for r in rows.values() if r["class"] not in ("correct", "timing") and r["rc"] != 0]
n_checks = sum(1 for r in rows.values() if r["class"] in ("correct", "timing"))
# Failures first and the table last: the end of the output is what a caller sees.
flines = [f"FAILED  {r['name']}: rc {r['rc']}: {r['note']}" for r in sorted(fails, key=lambda r: r["name"])]
flines += [f"note    {r['name']}: rc {r['rc']}: {r['note']} (not a correctness check)"
           for r in sorted(other, key=lambda r: r["name"])]
tail = ["", "\n".join(lines), "", f"checks: {n_checks - len(fails)} of {n_checks} fusert correctness/timing "
        "steps passed (logs of each step: logs.tar.gz, logs/<step>.log)"]
notes = [textwrap.fill(s, 100, initial_indent="  ", subsequent_indent="    ") for s in notes]
full = "\n".join(flines + [""] + notes + tail)
shown = [l[:200] for l in flines[:12]]
if len(flines) > 12:
    shown.append(f"... and {len(flines) - 12} more (summary.txt)")
print("\n".join(shown + [""] + notes + tail))
with open(os.path.join(work, "summary.txt"), "w") as f:
    f.write(full + "\n")
with open(os.path.join(work, "results.jsonl"), "w") as f:
    for r in sorted(rows.values(), key=lambda r: r["name"]):
        f.write(json.dumps(dict(r, kind="step")) + "\n")
    for r in results:
        f.write(json.dumps(dict(r, kind="model")) + "\n")
    if copy:
        f.write(json.dumps(dict(copy, kind="copy")) + "\n")
PY
}


if [[ -n $SUMMARY_ONLY ]]; then
  if [[ ! -d $SUMMARY_ONLY ]]; then echo "run.sh: --summary-only: no folder '$SUMMARY_ONLY'" >&2; exit 2; fi
  summarise "$SUMMARY_ONLY"
  exit 0
fi

# =============================================================================================
section "0. setup"
# =============================================================================================
if ((DRY)); then
  echo "dry run: checking files, bash -n, printing the commands (nothing is run or written)"
  missing=0
  needed=(tools/torch_bench.py tools/golden_util.py tools/seeded_init.py tools/make_goldens.py
          tools/make_transformer_goldens.py tests/cli/expect.sh tests/cli/make_fixtures.py
          tests/cli/data/malformed.yaml tests/cli/data/tiny.yaml models/zoo.yaml)
  for m in "${MODELS[@]}"; do needed+=("models/$m.yaml"); done
  for f in "${needed[@]}"; do
    if [[ -f $f ]]; then echo "  found   $f"; else echo "  MISSING $f"; missing=$((missing + 1)); fi
  done
  if bash -n "$SELF"; then echo "  bash -n $SELF: ok"; else echo "  bash -n: FAILED"; missing=$((missing + 1)); fi
  for b in infer bench test_cuda fusert-zoo; do
    if [[ -x $BUILD/bin/$b ]]; then echo "  carried build: $BUILD/bin/$b ($(du -h "$BUILD/bin/$b" | cut -f1))"
    else echo "  carried build: $BUILD/bin/$b not there yet (run tests/gpu/prepare.sh, carry it)"; fi
  done
  [[ -f $BUILD/manifest.txt ]] && sed -n '1,6p' "$BUILD/manifest.txt" | sed 's/^/  manifest: /'
  [[ -d $BUILD ]] && echo "  carried size: $(du -sm "$BUILD" | cut -f1) MiB (limit 60)"
  ((missing == 0)) || { echo "run.sh --dry-run: $missing problem(s)"; exit 1; }
  FUSERT_LD='<BUILD/lib:/usr/local/cuda/lib64:SITE/nvidia/*/lib>'
else
  nvidia-smi -L || echo "nvidia-smi -L failed"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>/dev/null || true
  echo "host: $(uname -srm), $(nproc) cores; python3: $(command -v python3 || echo none)"
  # CUDA libraries: the toolkit's first (same 13.0 NVRTC as prepare.sh's kernel cache), then
  # PyTorch's wheels (cuDNN lives only there, as a rule). Only fusert's commands get this path.
  SITE=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' 2>/dev/null || true)
  lib_dirs=("$BUILD/lib")
  [[ -d /usr/local/cuda/lib64 ]] && lib_dirs+=(/usr/local/cuda/lib64)
  for d in "$SITE"/nvidia/*/lib "$SITE"/nvidia/*/lib64; do [[ -d $d ]] && lib_dirs+=("$d"); done
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
      [[ -e $d/libcuda.so.1 ]] && lib_dirs+=("$d")
    done
  fi
  FUSERT_LD=$(IFS=:; echo "${lib_dirs[*]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "LD_LIBRARY_PATH for fusert: $FUSERT_LD"
  for lib in libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libnvrtc.so.13 libnvJitLink.so.13; do
    found=""
    for d in "${lib_dirs[@]}"; do
      [[ -e $d/$lib ]] && { found=$(readlink -f "$d/$lib"); break; }
    done
    echo "  $lib -> ${found:-NOT FOUND in the directories above}"
  done
fi

# The carried build: usable when infer starts here.
BUILD_OK=0
FENV=(env "LD_LIBRARY_PATH=$FUSERT_LD" "FUSERT_CACHE_DIR=$WORK/kernel-cache" OMP_WAIT_POLICY=PASSIVE)
INFER=("${FENV[@]}" "$BUILD/bin/infer")
if ((!DRY)); then
  if [[ -x $BUILD/bin/infer ]]; then
    echo "--- ldd $BUILD/bin/infer"
    env LD_LIBRARY_PATH="$FUSERT_LD" ldd "$BUILD/bin/infer" | tee "$WORK/logs/ldd_infer.log" || true
    if grep -q 'not found' "$WORK/logs/ldd_infer.log"; then
      echo "MISSING LIBRARIES:"; grep 'not found' "$WORK/logs/ldd_infer.log"
    fi
    [[ -f $BUILD/manifest.txt ]] && { echo "--- manifest"; sed -n '1,12p' "$BUILD/manifest.txt"; }
    if "${INFER[@]}" --help >/dev/null 2>"$WORK/logs/infer_help.log"; then BUILD_OK=1; fi
  fi
  if ((BUILD_OK)); then
    # The binaries read models and test data under the source folder baked in at build time.
    src=$(sed -n 's/^source_dir=//p' "$BUILD/manifest.txt" 2>/dev/null || true)
    if [[ -n $src && ! -e $src ]]; then
      if mkdir -p "$(dirname "$src")" 2>/dev/null && ln -s "$REPO" "$src" 2>/dev/null; then
        echo "linked the build's source folder $src -> $REPO"
      else
        echo "warning: cannot create $src (the build's source folder): tests reading it will fail"
      fi
    elif [[ -n $src ]] && ! [[ $src -ef $REPO ]]; then
      echo "warning: the build's source folder $src exists and is not this checkout ($REPO)"
    fi
    mkdir -p "$WORK/kernel-cache"
    if [[ -d $BUILD/kernel-cache ]]; then cp -r "$BUILD/kernel-cache/." "$WORK/kernel-cache/"; fi
    echo "kernel cache: $(find "$WORK/kernel-cache" -type f | wc -l) files carried"
  else
    echo "NO USABLE CARRIED BUILD in $BUILD: $( [[ -x $BUILD/bin/infer ]] && tail -n3 "$WORK/logs/infer_help.log" || echo 'bin/infer is not there')"
    echo "  Run tests/gpu/prepare.sh on the development machine and carry the folder it stages"
    echo "  (run tool: carry [\"build-gpu\"]). Building fusert here is not possible: this machine has"
    echo "  no Eigen, yaml-cpp, nlohmann-json, doctest, libpng or libjpeg headers and cannot install any; a build"
    echo "  here would need those headers and libyaml-cpp.a carried in a git-ignored folder."
    echo "  Skipping every fusert step (recorded as failures); PyTorch timings still run."
    record correct carried_build 1 0 "no usable carried build in $BUILD"
  fi
fi
STEP_OK=$((DRY || BUILD_OK))

# =============================================================================================
section "1. correctness: test_cuda, then CUDA vs CPU on every model (seeds $SEED..$((SEED + 3)))"
# =============================================================================================
# A failing comparison runs once more with FUSERT_CUDA_SYNC_STEPS=1 (a sync and check after every
# step, CUDA Graphs off), so that a device fault names the step that caused it; the first exit
# status stands.
DIAG=(sh -c '"$@" && exit 0; rc=$?; echo "--- exit $rc: once more with FUSERT_CUDA_SYNC_STEPS=1 (names a faulting step)"
  FUSERT_CUDA_SYNC_STEPS=1 "$@" --runs 1; exit $rc' sh)
if ((STEP_OK)); then
  if ((DRY)) || [[ -x $BUILD/bin/test_cuda ]]; then
    # Device tests print "skipped: no CUDA device" when they find none: on this machine, a failure.
    FAIL_RE='skipped: no CUDA device' EXPECT_RE='test cases:' \
      run_step correct test_cuda "$CAP_TEST_CUDA" "${FENV[@]}" "$BUILD/bin/test_cuda" --duration=false || true
  else
    record correct test_cuda 1 0 "MISSING: $BUILD/bin/test_cuda was not built/carried"
    echo "  [FAIL] test_cuda                          missing from the carried build"
  fi
  for m in "${MODELS[@]}"; do
    for mode in none all tf32 batch5; do
      case $mode in
        none) args=(--fusion none --seed "$SEED") ;;
        all) args=(--fusion all --seed $((SEED + 1))) ;;
        tf32) args=(--fusion all --tf32 --seed $((SEED + 2))) ;;
        # a shape other than the opt point: its own instance, arena and CUDA Graph (symbolic batch)
        batch5) args=(--fusion all --batch 5 --runs 3 --seed $((SEED + 3))) ;;
      esac
      EXPECT_RE='cuda vs cpu: rel L2' pool_step correct "cuda_${m}_${mode}" "$CAP_COMPARE" \
        "${DIAG[@]}" "${FENV[@]}" OMP_NUM_THREADS=4 "$BUILD/bin/infer" --model "models/$m.yaml" --device cuda --seeded \
        --compare-cpu "${args[@]}"
    done
  done
  pool_wait
else
  echo "  skipped: no usable carried build"
fi
snapshot

# =============================================================================================
section "1b. real ONNX models (carried in BUILD/onnx): CUDA vs CPU, fusion none and all"
# =============================================================================================
# Their own weights (no --seeded), a seeded input; ops the CUDA backend has no lowering for run on the host
# (host-fallback steps, counted in --explain and the stats).
ONNX_LIST=$BUILD/onnx/shapes.txt
if ((STEP_OK)) && [[ -f $ONNX_LIST ]]; then
  while read -r name shape; do
    for mode in none all; do
      EXPECT_RE='cuda vs cpu: rel L2' EXPECT_FILE=$WORK/timing/onnx_$name.$mode.json pool_step correct \
        "onnx_${name}_$mode" "$CAP_COMPARE" "${DIAG[@]}" "${FENV[@]}" OMP_NUM_THREADS=4 "$BUILD/bin/infer" \
        --model "$BUILD/onnx/$name.onnx" --shape "$shape" --device cuda --fusion "$mode" --compare-cpu \
        --runs 20 --warmup 3 --stats-json "$WORK/timing/onnx_$name.$mode.json"
    done
  done <"$ONNX_LIST"
  pool_wait
elif ((DRY)); then
  echo "  [onnx] infer --model BUILD/onnx/NAME.onnx --shape S --device cuda --compare-cpu, per line of $ONNX_LIST"
else
  echo "  skipped: no $ONNX_LIST (tests/gpu/prepare.sh stages it from make onnx-models)"
fi
snapshot

# =============================================================================================
section "2. bad inputs on cuda (exit status 1 and the message)"
# =============================================================================================
if ((STEP_OK)); then
  EXPECT=(sh tests/cli/expect.sh)
  run_step correct bad_model_missing "$CAP_BAD" "${EXPECT[@]}" 1 'no_such_model\.yaml: cannot open model file' -- \
    "${INFER[@]}" --device cuda --model tests/cli/data/no_such_model.yaml || true
  run_step correct bad_malformed_yaml "$CAP_BAD" "${EXPECT[@]}" 1 'malformed\.yaml:5:1: malformed YAML' -- \
    "${INFER[@]}" --device cuda --model tests/cli/data/malformed.yaml || true
  # x_wrong_shape.npy comes from the CLI tests' fixture writer (stdlib python).
  if ((DRY)); then
    echo "  [fixtures] python3 tests/cli/make_fixtures.py $WORK/fx $REPO"
  else
    python3 tests/cli/make_fixtures.py "$WORK/fx" "$REPO" >"$WORK/logs/fixtures.log" 2>&1 || true
  fi
  if ((DRY)) || [[ -f $WORK/fx/x_wrong_shape.npy ]]; then
    run_step correct bad_npy_wrong_shape "$CAP_BAD" "${EXPECT[@]}" 1 \
      "x_wrong_shape\\.npy: input 'x' of model 'tiny' expects f32 \\[1, 3, 4, 4\\], the file holds f32 \\[1, 3, 5, 5\\]" -- \
      "${INFER[@]}" --device cuda --model tests/cli/data/tiny.yaml --seeded --input "$WORK/fx/x_wrong_shape.npy" || true
    # and the right-shape input still runs on cuda and matches the CPU
    EXPECT_RE='cuda vs cpu: rel L2' run_step correct good_npy_tiny "$CAP_BAD" \
      "${INFER[@]}" --device cuda --model tests/cli/data/tiny.yaml --seeded --input "$WORK/fx/x_ok.npy" --compare-cpu || true
  else
    record correct bad_npy_wrong_shape 1 0 "fixture writer failed: $(tail -n1 "$WORK/logs/fixtures.log")"
  fi
  # The zoo's CUDA rows: seeded models with a PyTorch golden (no weights files, no ONNX Runtime
  # needed here), all in prepare.sh's warmed kernel cache. "0 skipped" proves they ran on the device.
  if ((DRY)) || [[ -x $BUILD/bin/fusert-zoo ]]; then
    EXPECT_RE='\[zoo\] .* rows: [0-9]+ ok, 0 failed, 0 errors, 0 skipped' run_step correct zoo_cuda "$CAP_ZOO" \
      "${FENV[@]}" "$BUILD/bin/fusert-zoo" --manifest models/zoo.yaml --device cuda --fusion none,all --runs 3 \
      --models resnet18,resnet50,mobilenet_v2,branch_merge,transformer_block,bert_base_layer,multitask_heads \
      --junit "$WORK/logs/zoo_cuda.xml" --json "$WORK/logs/zoo_cuda.json" || true
  else
    record correct zoo_cuda 1 0 "MISSING: $BUILD/bin/fusert-zoo was not built/carried"
  fi
else
  echo "  skipped: no usable carried build"
fi
snapshot

# =============================================================================================
section "3. timing: fusert on cuda, CUDA Graph on and off ($RUNS runs after $WARMUP)"
# =============================================================================================
if ((STEP_OK)); then
  for m in "${MODELS[@]}"; do
    # inputs/outputs of the graph, for the bytes-moved estimate (CPU only, instant)
    if ((DRY)); then echo "  [dump] $(q "${INFER[@]}" --model "models/$m.yaml" --dump) > $WORK/dump/$m.txt"
    else "${INFER[@]}" --model "models/$m.yaml" --dump >"$WORK/dump/$m.txt" 2>&1 || true; fi
    for g in graph nograph; do
      flag=(); [[ $g == nograph ]] && flag=(--no-cuda-graph)
      EXPECT_FILE=$WORK/timing/$m.$g.json run_step timing "time_${m}_$g" "$CAP_TIMING" "${INFER[@]}" --model "models/$m.yaml" \
        --device cuda --seeded --runs "$RUNS" --warmup "$WARMUP" "${flag[@]}" \
        --stats-json "$WORK/timing/$m.$g.json" || true
    done
  done
else
  echo "  skipped: no usable carried build"
fi
snapshot

# =============================================================================================
section "4. PyTorch: eager on every model + copy bandwidth, then torch.compile (capped)"
# =============================================================================================
TB=(python3 tools/torch_bench.py --runs "$RUNS" --warmup "$WARMUP" --pylib "$BUILD/pylib")
models_csv=$(IFS=,; echo "${MODELS[*]}")
# stdout (JSON lines) into WORK/torch via sh -c, so run_step's log keeps the progress (stderr).
run_step torch torch_eager "$CAP_TORCH_EAGER" sh -c '"$@" 2>&1 >"'"$WORK/torch/eager.jsonl"'"' sh \
  "${TB[@]}" --models "$models_csv" --no-compile --copy-bandwidth || true
for m in "${COMPILE_MODELS[@]}"; do
  [[ " ${MODELS[*]} " == *" $m "* ]] || continue
  if ((!DRY && $(left) - RESERVE < COMPILE_TIMEOUT / 2)); then
    record torch "torch_compile_$m" 125 0 "skipped: time budget used up"
    echo "  [SKIP] torch_compile_$m: time budget used up"
    continue
  fi
  run_step torch "torch_compile_$m" $((COMPILE_TIMEOUT + 40)) sh -c '"$@" 2>&1 >"'"$WORK/torch/compile.$m.jsonl"'"' sh \
    "${TB[@]}" --models "$m" --compile-models "$m" --compile-timeout "$COMPILE_TIMEOUT" || true
done
snapshot

# =============================================================================================
section "5. extra, while the budget lasts: bench --device cuda (fused vs unfused side by side)"
# =============================================================================================
if ((STEP_OK)) && ((DRY || $(left) - RESERVE >= 30)); then
  yamls=()
  for m in "${MODELS[@]}"; do yamls+=("models/$m.yaml"); done
  run_step bench bench_cuda 90 "${FENV[@]}" "$BUILD/bin/bench" --device cuda --runs "$BENCH_RUNS" "${yamls[@]}" || true
  ((DRY)) || sed 's/^/    /' "$WORK/logs/bench_cuda.log"
elif ((STEP_OK)); then
  echo "  [SKIP] bench_cuda: time budget used up"
else
  echo "  skipped: no usable carried build"
fi

# =============================================================================================
section "6. summary"
# =============================================================================================
if ((DRY)); then
  echo "  [summary] python3 (stdlib) reads $WORK and prints: model | cpu check | fusert ms (graph) |"
  echo "            (no graph) | eager ms | compile ms | kernels | GB/s | % copy"
  echo "  [files]   $OUT/run.log, summary.txt, results.jsonl, logs.tar.gz"
  echo "run.sh --dry-run: ok (${#MODELS[@]} models; $RUNS runs; compile: ${COMPILE_MODELS[*]}, ${COMPILE_TIMEOUT}s each; budget ${BUDGET}s)"
  exit 0
fi
kc_after=$( (find "$WORK/kernel-cache" -type f 2>/dev/null || true) | wc -l)
echo "kernel cache after the run: $kc_after files (more than carried = kernels compiled on this machine)"
summarise "$WORK" || echo "summary failed (the logs are in logs.tar.gz)"
# The real ONNX models: one line per model and fusion mode, from their stats JSON and logs.
python3 - "$WORK" <<'PY' | tee -a "$WORK/summary.txt" || true
import glob, json, os, re, sys
work = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(work, "timing", "onnx_*.json"))):
    name, mode = os.path.basename(f)[5:-5].rsplit(".", 1)
    try:
        st = json.load(open(f))
    except (OSError, ValueError):
        continue
    log = open(os.path.join(work, "logs", f"onnx_{name}_{mode}.log"), errors="replace").read()
    m = re.search(r"cuda vs cpu: rel L2 ([0-9.e+-]+)", log)
    rows.append(f"{name:<24} {mode:<5} {m.group(1) if m else '-':>10} {st.get('kernels', '-'):>7} "
                f"{st.get('host_fallback_steps', '-'):>9} {st['latency_ms']['median']:>9.3f}")
if rows:
    print("\nreal ONNX models on cuda (seeded input, their own weights; latency: CUDA events, median of 20)")
    print(f"{'model':<24} {'mode':<5} {'rel L2':>10} {'kernels':>7} {'host fb':>9} {'ms':>9}")
    print("\n".join(rows))
PY
cp "$WORK/summary.txt" "$WORK/results.jsonl" "$OUT/" 2>/dev/null || true

# Exit status: every correctness (and fusert timing) step passed?
failed=0 total=0
for f in "$WORK"/results/*.tsv; do
  [[ -e $f ]] || continue
  IFS=$'\t' read -r class name rc _ <"$f"
  [[ $class == correct || $class == timing ]] || continue
  total=$((total + 1))
  ((rc == 0)) || failed=$((failed + 1))
done
snapshot
if ((failed == 0 && total > 0)); then
  echo "RESULT: PASS: all $total correctness and timing steps passed (${SECONDS}s)"
  status=0
else
  echo "RESULT: FAIL: $failed of $total correctness/timing steps failed (${SECONDS}s)"
  status=1
fi
exec 1>&3 2>&4
wait "$TEE_PID" 2>/dev/null || true
exit "$status"
