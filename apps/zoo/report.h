// fusert-zoo's results: one Row per model x device x fusion mode, printed as a table and written
// as JSON (also the baseline format) and JUnit XML (one test case per row).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusert/status.h"

namespace fusert::zoo {

struct Row {
  std::string model, device, fusion;
  std::string status;  ///< ok, FAIL, error (did not load or run), skipped (no CUDA device)
  std::string reason;  ///< why not ok; "; "-separated
  int64_t kernels = 0, intermediate_bytes = 0, peak_bytes = 0;
  double latency_ms = 0;        ///< median of the timed runs
  double ratio_to_unfused = 0;  ///< latency / the unfused row's of the same run and device
  double err_reference = -1;    ///< rel. L2 vs the reference (-1: none)
  double err_unfused = -1;      ///< rel. L2 vs fusion none (-1: none)
  double seconds = 0;           ///< wall time of the row (load + runs)
};

/// A previous run's row, as --baseline reads it.
struct Baseline {
  std::string model, device, fusion;
  int64_t kernels = 0, peak_bytes = 0;
  double latency_ms = 0, ratio_to_unfused = 0;
};

inline double mib(int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

void print_table(const std::vector<Row>& rows, const std::string& manifest, double seconds);
/// The JSON report: {"manifest", "rows": [...]}; read back by read_baseline.
Status write_json(const std::string& path, const std::vector<Row>& rows, const std::string& manifest);
/// JUnit XML: one <testsuite name="fusert-zoo">, a <testcase classname="zoo.MODEL"
/// name="DEVICE/FUSION"> per row with <failure>, <error> or <skipped> carrying the reason.
Status write_junit(const std::string& path, const std::vector<Row>& rows, double seconds);
Result<std::vector<Baseline>> read_baseline(const std::string& path);
/// Fails `r` when it has more kernels or peak bytes than its baseline row, or when its latency
/// ratio to the unfused run grew by more than `margin` (for the unfused row itself, which has no
/// same-run peer, the absolute median against the baseline's). Rows under 1 ms are not timed.
void compare_with_baseline(const std::vector<Baseline>& base, double margin, Row* r);

}  // namespace fusert::zoo
