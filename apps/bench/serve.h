// The two modes of `bench` that tools/cpu_bench.py drives: a worker process that holds one
// loaded session and times single runs on request (so that engines in separate processes can be
// interleaved run by run and each one's peak resident memory is its own), and the machine's
// measured FP32 FMA peak.
#pragma once

#include <string>
#include <vector>

namespace fusert::bench {

/// `bench --serve MODEL.yaml|MODEL.onnx [--fusion all|none|raw] [--threads T]
/// [--cpu-kernels onednn|reference] [--seeded] [--input NAME=FILE.npy ...] [--shape NAME=DIMS ...]`.
/// Loads the model, prints one JSON line `{"ready": true, "kernels": K, ...}` (or `{"error": ...}`
/// and returns 1), then answers one command per stdin line, one stdout line each:
///   `run`          one inference; prints its wall-clock time in ms (steady_clock around run())
///   `output PATH`  writes the first graph output as .npy; prints `ok` or `error: ...`
///   `stats`        prints `{"peak_rss_kb": ..., "kernels": ..., ...}` (VmHWM of /proc/self/status)
///   `profile`      prints `{"total_ms": ..., "reference_ms": ..., "reference_steps": N,
///                  "reference_kernels": [...]}`: Session::profile over 5 runs, the steps that run
///                  a plain reference loop summed
///   `quit`         exits 0 (so does end of input)
/// Inputs not given with --input are the session's seeded inputs. Returns the exit code.
int serve(const std::vector<std::string>& args);

/// `bench --fma-peak [--threads T]`: FP32 FMA throughput of T threads (0 = all cores), each
/// running independent fused multiply-adds in registers (AVX-512 where the CPU has it, else
/// AVX2+FMA, chosen at run time). Prints one JSON line
/// `{"gflops": G, "threads": T, "isa": "avx512"|"avx2"|"scalar", "lanes": L}`; one FMA counts
/// 2 FLOPs per lane. The best of 5 trials of about 0.2 s each.
int fma_peak(const std::vector<std::string>& args);

/// `--threads`' value: an integer in [0, 1024] (0 = all cores), else false (`abc`, `2x`, `-1`).
bool parse_threads(const std::string& v, int* threads);

}  // namespace fusert::bench
