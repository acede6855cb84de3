// infer's output: top-k table, per-output summary and the --stats-json document.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::app {

struct Latency {
  double median = 0, min = 0, max = 0;  // ms
};
Latency summarize(std::vector<double> ms);

/// Reads one label per line; empty vector if the file is missing.
std::vector<std::string> read_labels(const std::string& path);

/// Prints each output's shape, and for an [N, C] output (N <= 8) each row's top-k classes with
/// softmax probabilities (labels when their count matches C).
void print_outputs(const TensorMap& outputs, const std::vector<std::string>& labels, int topk);
/// The top-k lines of one row of C logits (softmax probabilities, labels when C matches).
void print_topk(const float* logits, int64_t c, const std::vector<std::string>& labels, int topk);

/// `first_run_ms`: the session's first (cold) run; `lat` over the warm runs.
Status write_stats_json(const std::string& path, const Session& s, const Latency& lat, int runs, double first_run_ms);

}  // namespace fusert::app
