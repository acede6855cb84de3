#!/usr/bin/env bash
# `make fuzz`: runs every loader fuzz target (tests/fuzz_loaders, built with libFuzzer in
# $BUILD) for FUZZ_RUNS executions or FUZZ_TIME seconds, whichever comes first, on a corpus
# seeded from the zoo and the tests. Any crash, leak, timeout or out-of-memory fails the run;
# the input is left in $BUILD/crashes/<target>/ (copy it to tests/fuzz_loaders/regressions/<target>/).
set -uo pipefail
BUILD=${BUILD:-build-fuzz}
FUZZ_RUNS=${FUZZ_RUNS:-1000000}
FUZZ_TIME=${FUZZ_TIME:-600}
TARGETS=${TARGETS:-"npy safetensors image tokenizer model"}
root=$(cd "$(dirname "$0")/.." && pwd)
declare -A seeds=(
  [npy]="$root/tests/runtime/data"
  [safetensors]="$root/tests/fuzz_loaders/corpus/safetensors"
  [image]="$root/tests/fuzz_loaders/corpus/image"
  [tokenizer]="$root/tests/fuzz_loaders/corpus/tokenizer"
  [model]="$root/models $root/tests/cli/data"
)
declare -A max_len=([image]=4096 [tokenizer]=2048 [model]=8192)  # small inputs run fast (model: ~700 exec/s at 8 KiB, ~120 at 64 KiB); the seeds are small ones
failed=0
printf "%-12s %12s %10s %s\n" target executions seconds result >> "$BUILD/fuzz-summary.txt"
for t in $TARGETS; do
  corpus="$BUILD/corpus/$t"; crashes="$BUILD/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  for d in ${seeds[$t]} "$root/tests/fuzz_loaders/regressions/$t"; do
    find "$d" -maxdepth 1 -type f -size -1024k -exec cp -n {} "$corpus/" \; 2>/dev/null
  done
  echo "[fuzz] $t: up to $FUZZ_RUNS executions or $FUZZ_TIME s"
  start=$(date +%s)
  ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$BUILD/tests/fuzz_$t" "$corpus" -runs="$FUZZ_RUNS" -max_total_time="$FUZZ_TIME" -timeout=10 \
    -rss_limit_mb=4096 -malloc_limit_mb=4096 -max_len="${max_len[$t]:-65536}" -print_final_stats=1 \
    -artifact_prefix="$crashes/" > "$BUILD/fuzz-$t.log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$BUILD/fuzz-$t.log" | grep -o '[0-9]*$' | tail -1)
  result=ok
  if [ $rc -ne 0 ]; then result="FAILED (exit $rc, see $BUILD/fuzz-$t.log)"; failed=1; fi
  printf '%-12s %12s %10s %s\n' "$t" "${execs:-?}" "$secs" "$result" | tee -a "$BUILD/fuzz-summary.txt"
done
cat "$BUILD/fuzz-summary.txt"
exit $failed
