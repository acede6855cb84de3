// Command-line options of the `infer` demo.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::app {

struct InferOptions {
  std::string model;                // empty: the default model (EfficientNet-Lite0)
  std::string input;                // the one image (.png/.jpg/...) or .npy; empty: default photo or seeded
  std::vector<std::string> images;  // several --input, or a directory: classified in batches
  /// --input NAME=FILE.npy (repeatable): one run with each named graph input read from its file
  std::map<std::string, std::string> named_inputs;
  std::string output, dot, stats_json;
  std::vector<std::string> texts;  // --text (repeatable) and lines of --text-file
  std::string text_file;
  int runs = 0, warmup = -1, topk = 5;  // runs 0 / warmup -1: the defaults (parse_args)
  int batch_size = 32;                  // --batch-size: texts or images per run
  int batch = -1;                       // --batch: seeded input of this batch size (-1: the model's opt point)
  bool dump = false, list_ops = false, help = false;
  bool explain = false, verify = false, ablation = false, profile = false;
  bool compare_cpu = false;  // --compare-cpu: run the same input on the CPU and compare
  SessionOptions session;
};

/// Parses argv. Returns an error naming the bad flag or value (exit code 2 in main).
Result<InferOptions> parse_args(int argc, char** argv);
const char* usage();

}  // namespace fusert::app
