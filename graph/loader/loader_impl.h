// Internal: the YAML loader's state, shared by model_loader.cc (top level) and
// node_reader.cc (template expansion, nodes, initializers, attributes).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/loader/model_loader.h"
#include "graph/loader/substitute.h"

namespace fusert::detail {

constexpr int kMaxTemplateDepth = 16;

class Loader {
 public:
  /// `values` (nullable): symbolic dims' values; each dim's opt when null.
  Loader(std::string file, std::string base_dir, const DimValues* values = nullptr)
      : file_(file), base_dir_(std::move(base_dir)), cur_file_(std::move(file)), values_(values) {}
  Status load(const YAML::Node& root, ModelSpec* spec);

 private:
  SourceLoc loc(const YAML::Node& n) const {
    // An empty document's node has yaml-cpp's null mark (-1): report it as 1:1.
    SourceLoc l{cur_file_, std::max(n.Mark().line + 1, 1), std::max(n.Mark().column + 1, 1), via_};
    return l;
  }
  ErrorBuilder fail(const YAML::Node& n, StatusCode code = StatusCode::kParseError) const {
    ErrorBuilder b(code);
    b << loc(n).str() << ": ";
    return b;
  }
  /// Fails at `parent` when its required `key` is absent: an absent key has no position of its
  /// own (yaml-cpp throws on Mark() of a missing node).
  Status require_key(const YAML::Node& parent, const char* key, const std::string& what) const {
    if (parent[key]) return Status();
    return fail(parent) << what << " is missing";
  }
  Result<std::string> scalar(const YAML::Node& n, const Bindings& env, const char* what) const;
  Result<int64_t> integer(const YAML::Node& n, const Bindings& env, const char* what) const;
  Status check_keys(const YAML::Node& n, const std::set<std::string>& allowed, const char* what) const;
  Status read_templates(const YAML::Node& t, const std::string& file);
  /// `list` is the include list of `file`; its entries are relative to `dir` (the including
  /// file's directory).
  Status read_includes(const YAML::Node& list, const std::string& file, const std::string& dir, int depth);
  Status read_dims(const YAML::Node& map, ModelSpec* spec);
  Status read_inputs(const YAML::Node& list, ModelSpec* spec);
  Status read_preprocess(const YAML::Node& n, PreprocessSpec* p);
  Status expand_list(const YAML::Node& list, const Bindings& env, bool initializers, Graph& g, int depth);
  Status expand_use(const YAML::Node& use, const Bindings& env, Graph& g, int depth);
  Status add_initializer(const YAML::Node& n, const Bindings& env, Graph& g);
  Status add_node(const YAML::Node& n, const Bindings& env, Graph& g);
  Result<AttrValue> read_attr(const YAML::Node& n, const Bindings& env, const AttrSchema& schema,
                              const std::string& node_name) const;
  std::string resolve(const std::string& p) const {
    if (p.empty() || p[0] == '/') return p;
    return (std::filesystem::path(base_dir_) / p).lexically_normal().string();
  }

  std::string file_, base_dir_, via_;
  std::string cur_file_;
  std::vector<std::string> include_stack_;  // files being included, outermost first
  std::set<std::string>
      included_;  // files already read  // file whose YAML is being read (differs inside included templates)
  std::map<std::string, YAML::Node> templates_;
  std::map<std::string, std::string> template_files_;  // template name -> file defining it
  std::set<std::string> node_names_;
  const DimValues* values_ = nullptr;
  Bindings dims_env_;  // symbolic dim -> its value, the top-level bindings of `${...}`
};

}  // namespace fusert::detail

namespace fusert {

/// Expands the model text at `values` (nullptr: each dim's opt); shared by model_loader.cc and
/// dims.cc.
Result<ModelSpec> load_root(const std::string& text, const std::string& name, const std::string& base_dir,
                            const DimValues* values);

}  // namespace fusert
