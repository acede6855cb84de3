// Loads a YAML model file (models/FORMAT.md) into a verified, shape-inferred Graph.
#pragma once

#include <functional>
#include <map>
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

/// A symbolic input dimension (models/FORMAT.md, "Symbolic dimensions"): an input dim named
/// in `dims:` takes any value in [min, max] at run time; the model is loaded, canonicalised and
/// fusion-planned at `opt` (the optimisation point).
struct SymbolicDim {
  std::string name;
  int64_t min = 1, max = 1, opt = 1;
  /// An open dim: an ONNX input dim that no declaration bounds (min 1, max the tensor limit,
  /// opt a size the model imports at). It is probed at `probe` (0: not probed), not at min and
  /// max, for the constants that follow it.
  bool open = false;
  int64_t probe = 0;
  /// A data-dependent count (graph/data_dependent.h): the output size of node `producer`, bound
  /// from what that node returns at run time, not from an input (min 0; open).
  bool data_dependent = false;
  std::string producer;
};

/// A dim declared with its range (`dims:`, --dim).
inline SymbolicDim declared_dim(const std::string& name, int64_t min, int64_t max, int64_t opt) {
  SymbolicDim d;
  d.name = name;
  d.min = min;
  d.max = max;
  d.opt = opt;
  return d;
}

/// Values of symbolic dims by name, e.g. {{"batch", 4}, {"seq", 37}}.
using DimValues = std::map<std::string, int64_t>;

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
  /// Symbolic dims in declaration order; empty for a model of static shapes.
  std::vector<SymbolicDim> dims;
  /// Per graph input (same order as graph.inputs), per dimension: the symbol's name, or "" for
  /// a fixed dimension. graph's input shapes hold the values at `dims`' opt points.
  std::vector<std::vector<std::string>> input_dims;
  /// The values the graph was instantiated at (each dim's opt for load_model).
  DimValues dim_values;
  /// Constants the import folded from a data-dependent output's shape (graph/data_dependent.h),
  /// by name: the counts (dim names) they follow. They are symbolic.
  std::map<std::string, std::vector<std::string>> count_constants;
  /// The model text and the directory its relative paths resolve against (instantiate_model).
  std::string source_text, base_dir;
  /// Reads the model again with its symbolic dims at other values, for a front end other than
  /// the YAML text above (the ONNX import); empty for YAML models.
  std::function<Result<ModelSpec>(const DimValues&)> expand_at;
};

/// Reads and expands `path` at each symbolic dim's opt value. Constants whose values depend on
/// a symbolic dim (found by expanding the model again at every dim's min and at its max) are
/// marked Value::symbolic. Errors name file:line:column (and the template use site); a model
/// whose node structure depends on a dim is kInvalidArgument.
Result<ModelSpec> load_model(const std::string& path);
/// Marks the constants of `spec` that depend on a symbolic dim (Value::symbolic), found by
/// expanding the model again at every dim's min and at every dim's max; no-op without dims.
Status mark_symbolic(ModelSpec& spec);
/// The same model expanded at `values` (every symbolic dim, within its range): input shapes and
/// symbolic constants at those values; weights not bound. Errors: a dim missing or out of range
/// (kInvalidArgument naming dim and range), a shape error of the model at these values
/// (file:line of the node), a structure that differs from `base`'s.
Result<ModelSpec> instantiate_model(const ModelSpec& base, const DimValues& values);
/// Same, from text (tests); `name` stands in for the file name in errors, `base_dir` resolves
/// relative paths.
Result<ModelSpec> load_model_from_string(const std::string& text, const std::string& name,
                                         const std::string& base_dir = ".");

}  // namespace fusert
