// Loads a YAML model file (models/FORMAT.md) into a verified, shape-inferred Graph.
#pragma once

#include <string>
#include <vector>

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

/// Image preprocessing declared by a model (models/FORMAT.md, "Preprocessing").
struct PreprocessSpec {
  bool present = false;
  int64_t resize = 0;  ///< short side after resize (0 = no resize)
  int64_t crop = 0;    ///< centre crop size (0 = no crop)
  double divisor = 255.0;
  std::vector<double> mean{0, 0, 0}, std{1, 1, 1};
  std::string color = "RGB", layout = "NCHW";
};

/// A loaded model: the graph (topologically sorted, shapes inferred, verified; weights not yet
/// bound) plus the file's metadata with paths resolved relative to the YAML file.
struct ModelSpec {
  Graph graph;
  std::string path, description;
  PreprocessSpec preprocess;
  std::string labels_path;                  ///< empty when the model declares none
  std::string weights_path;                 ///< the model's default weights file, empty when none
  std::string weights_fetch;                ///< command that produces weights_path, for error messages
  std::vector<std::string> weights_ignore;  ///< globs of weights-file tensors the model does not use
  std::string tokenizer_vocab;              ///< WordPiece vocab.txt for text inputs, empty when none
  int64_t tokenizer_max_length = 0;         ///< tokens per text incl. [CLS]/[SEP] (0: the input's length)
};

/// Reads and expands `path`. Errors name file:line:column (and the template use site).
Result<ModelSpec> load_model(const std::string& path);
/// Same, from text (tests); `name` stands in for the file name in errors, `base_dir` resolves
/// relative paths.
Result<ModelSpec> load_model_from_string(const std::string& text, const std::string& name,
                                         const std::string& base_dir = ".");

}  // namespace fusert
