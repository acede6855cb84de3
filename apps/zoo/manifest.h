// The zoo manifest of fusert-zoo (format in models/ZOO.md): which models a regression run
// loads, on which devices and fusion modes, with which weights and inputs, against which
// reference and within which bounds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "fusert/fusert.h"
#include "fusert/status.h"

namespace fusert::zoo {

/// Upper bounds of a plan, per fusion mode: a row over one fails. The CPU and CUDA plans of one
/// model differ (other kernels, other arena), so each device has its own.
struct ZooBounds {
  std::map<std::string, int64_t> kernels;         ///< launches per inference
  std::map<std::string, double> peak_mb;          ///< activation arena after reuse (MiB)
  std::map<std::string, double> intermediate_mb;  ///< intermediate bytes written + read (MiB)
};

/// One model of the manifest, its defaults applied. Paths are absolute (resolved against the
/// manifest's directory).
struct ZooModel {
  std::string name;
  std::string model;                                     ///< YAML or ONNX file
  std::map<std::string, std::vector<int64_t>> shapes;    ///< ONNX: bindings of symbolic dims
  std::string weights = "model";                         ///< "model" (its own file, else seeded), "seeded" or a path
  uint64_t seed = 0;                                     ///< seeded weights
  std::string fetch;                                     ///< how to get a missing file (shown in the error)
  uint64_t input_seed = 0;                               ///< seeded inputs
  std::string image;                                     ///< the first input from an image (model's preprocessing)
  std::map<std::string, std::string> npy_inputs;         ///< named inputs from .npy files
  std::string reference_npy;                             ///< expected output(s), flattened
  std::string reference_command;                         ///< or a command writing it: {model} {inputs} {output}
  std::vector<std::string> reference_outputs;            ///< outputs compared (default: the first)
  double tolerance = 1e-4;                               ///< rel. L2 vs the reference and vs fusion none
  std::vector<std::string> devices = fusert::devices();  ///< every backend of this build
  std::vector<std::string> fusion{"none", "all"};
  int runs = 5, warmup = 1, threads = 1;
  double latency_margin = 1.5;  ///< allowed ratio growth against the baseline
  ZooBounds expect;             ///< bounds of the CPU rows (`expect`)
  ZooBounds expect_cuda;        ///< bounds of the CUDA rows (`expect_cuda`; none if absent)
  std::string dir;              ///< the manifest's directory (commands run there)
};

/// Reads a manifest; errors (kParseError, kInvalidArgument, kNotFound) name the file and line.
Result<std::vector<ZooModel>> read_manifest(const std::string& path);

}  // namespace fusert::zoo
