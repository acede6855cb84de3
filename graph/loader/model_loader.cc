// YAML -> Graph: top-level keys, template expansion (repeat/start/chain), node and initializer
// conversion with typed attributes. yaml-cpp exceptions are caught here and never escape.
#include "graph/loader/model_loader.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "graph/base/file.h"
#include "graph/data_dependent.h"
#include "graph/loader/loader_impl.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace fusert::detail {

Result<std::string> Loader::scalar(const YAML::Node& n, const Bindings& env, const char* what) const {
  if (!n.IsDefined() || n.IsNull()) return fail(n) << what << " is missing";
  if (!n.IsScalar()) return fail(n) << what << " must be a scalar";
  auto r = substitute(n.Scalar(), env);
  if (!r.ok()) return fail(n) << what << ": " << r.status().message();
  return r;
}

Result<int64_t> Loader::integer(const YAML::Node& n, const Bindings& env, const char* what) const {
  FUSERT_ASSIGN_OR_RETURN(std::string s, scalar(n, env, what));
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') return fail(n) << what << " must be an integer, got '" << s << "'";
  return static_cast<int64_t>(v);
}

Status Loader::check_keys(const YAML::Node& n, const std::set<std::string>& allowed, const char* what) const {
  if (!n.IsMap()) return fail(n) << what << " must be a mapping";
  for (const auto& kv : n) {
    std::string key = kv.first.Scalar();
    if (!allowed.count(key)) {
      std::string list;
      for (const std::string& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return fail(kv.first) << "unknown key '" << key << "' in " << what << " (allowed: " << list << ")";
    }
  }
  return Status();
}

Status Loader::load(const YAML::Node& root, ModelSpec* spec) {
  if (!root.IsMap()) return fail(root) << "a model file must be a YAML mapping";
  FUSERT_RETURN_IF_ERROR(check_keys(
      root,
      {"fusert", "name", "description", "inputs", "outputs", "preprocess", "labels", "weights", "weights_fetch",
       "weights_ignore", "tokenizer", "include", "templates", "initializers", "nodes", "dims"},
      "the model file"));
  Bindings none;
  FUSERT_RETURN_IF_ERROR(require_key(root, "fusert", "'fusert' (format version)"));
  FUSERT_ASSIGN_OR_RETURN(int64_t version, integer(root["fusert"], none, "'fusert' (format version)"));
  if (version != 1) return fail(root["fusert"]) << "unsupported format version " << version << " (this build reads 1)";
  Graph& g = spec->graph;
  g.source_file = file_;
  FUSERT_RETURN_IF_ERROR(require_key(root, "name", "'name'"));
  FUSERT_ASSIGN_OR_RETURN(g.name, scalar(root["name"], none, "'name'"));
  if (root["description"]) spec->description = root["description"].as<std::string>("");
  if (root["labels"]) {
    FUSERT_ASSIGN_OR_RETURN(std::string l, scalar(root["labels"], none, "'labels'"));
    spec->labels_path = resolve(l);
  }
  if (root["weights"]) {
    FUSERT_ASSIGN_OR_RETURN(std::string w, scalar(root["weights"], none, "'weights'"));
    spec->weights_path = resolve(w);
  }
  if (root["weights_fetch"]) {
    FUSERT_ASSIGN_OR_RETURN(spec->weights_fetch, scalar(root["weights_fetch"], none, "'weights_fetch'"));
  }
  if (root["preprocess"]) FUSERT_RETURN_IF_ERROR(read_preprocess(root["preprocess"], &spec->preprocess));
  if (const YAML::Node ig = root["weights_ignore"]) {
    if (!ig.IsSequence()) return fail(ig) << "'weights_ignore' must be a list of tensor-name globs";
    for (const YAML::Node& e : ig) {
      FUSERT_ASSIGN_OR_RETURN(std::string pat, scalar(e, none, "'weights_ignore' entry"));
      spec->weights_ignore.push_back(pat);
    }
  }
  if (const YAML::Node t = root["tokenizer"]) {
    FUSERT_RETURN_IF_ERROR(check_keys(t, {"vocab", "max_length"}, "'tokenizer'"));
    FUSERT_ASSIGN_OR_RETURN(std::string vocab, scalar(t["vocab"], none, "'tokenizer' vocab"));
    spec->tokenizer_vocab = resolve(vocab);
    if (t["max_length"]) {
      FUSERT_ASSIGN_OR_RETURN(spec->tokenizer_max_length, integer(t["max_length"], none, "'tokenizer' max_length"));
    }
  }
  if (const YAML::Node d = root["dims"]) FUSERT_RETURN_IF_ERROR(read_dims(d, spec));
  if (!root["inputs"] || !root["inputs"].IsSequence()) return fail(root) << "'inputs' (a list) is required";
  FUSERT_RETURN_IF_ERROR(read_inputs(root["inputs"], spec));
  include_stack_ = {std::filesystem::path(file_).lexically_normal().string()};
  if (const YAML::Node inc = root["include"]) FUSERT_RETURN_IF_ERROR(read_includes(inc, file_, base_dir_, 0));
  FUSERT_RETURN_IF_ERROR(read_templates(root["templates"], file_));
  if (const YAML::Node inits = root["initializers"]) FUSERT_RETURN_IF_ERROR(expand_list(inits, dims_env_, true, g, 0));
  if (!root["nodes"] || !root["nodes"].IsSequence()) return fail(root) << "'nodes' (a list) is required";
  FUSERT_RETURN_IF_ERROR(expand_list(root["nodes"], dims_env_, false, g, 0));
  const YAML::Node outs = root["outputs"];
  if (!outs || !outs.IsSequence() || outs.size() == 0)
    return fail(root) << "'outputs' (a non-empty list of value names) is required";
  for (const YAML::Node& o : outs) {
    FUSERT_ASSIGN_OR_RETURN(std::string name, scalar(o, none, "output name"));
    ValueId id = g.find_value(name);
    if (id == kNoValue) return fail(o) << "graph output '" << name << "' is not produced by any node";
    g.outputs.push_back(id);
  }
  FUSERT_RETURN_IF_ERROR(topo_sort(g));
  for (Node& n : g.nodes) {  // in order; a data-dependent node is shaped at its count (graph/data_dependent.h)
    if (is_data_dependent(g, n)) {
      size_t k = 0;  // an op whose shape is computed: one count per output dim
      for (const SymbolicDim& d : shape_counts(g, n, values_)) {
        spec->dim_values[d.name] = is_shape_computed(n) ? n.attr_ints("counts").at(k++) : n.attr_i("count");
        spec->dims.push_back(d);
      }
    }
    FUSERT_RETURN_IF_ERROR(infer_node_shapes(g, n));
  }
  return verify_graph(g);
}

Status Loader::read_templates(const YAML::Node& t, const std::string& file) {
  if (!t) return Status();
  if (!t.IsMap()) return fail(t) << "'templates' must be a mapping of name -> template";
  for (const auto& kv : t) {
    templates_[kv.first.Scalar()] = kv.second;
    template_files_[kv.first.Scalar()] = file;
  }
  return Status();
}

// `include: [other.yaml]` makes the templates of other files (and of their includes) usable
// here; nothing else of them is read. Paths are relative to the including file.
Status Loader::read_includes(const YAML::Node& list, const std::string& file, const std::string& dir, int depth) {
  // Locations of this list's entries are in `file`, which is not cur_file_ for nested includes.
  const std::string saved_file = cur_file_;
  cur_file_ = file;
  Status st = [&]() -> Status {
    if (!list.IsSequence()) return fail(list) << "'include' must be a list of files";
    if (depth >= kMaxTemplateDepth) return fail(list) << "includes nested deeper than " << kMaxTemplateDepth;
    for (const YAML::Node& item : list) {
      const std::string p = item.Scalar();
      const std::string path =
          p.empty() || p[0] == '/' ? p : (std::filesystem::path(dir) / p).lexically_normal().string();
      if (Status chk = check_regular_file(path, "included model file");
          !chk.ok() && chk.code() != StatusCode::kNotFound) {
        return fail(item, chk.code()) << chk.message();
      }
      if (std::find(include_stack_.begin(), include_stack_.end(), path) != include_stack_.end()) {
        std::string cycle;
        for (const std::string& f : include_stack_) cycle += f + " -> ";
        return fail(item) << "include cycle: " << cycle << path;
      }
      if (!included_.insert(path).second) continue;  // already read (a diamond of includes)
      YAML::Node other;
      try {
        other = YAML::LoadFile(path);
      } catch (const YAML::BadFile&) {
        return fail(item, StatusCode::kNotFound) << "cannot open included file '" << path << "'";
      } catch (const YAML::Exception& e) {
        return error(StatusCode::kParseError)
               << path << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": malformed YAML: " << e.msg;
      }
      if (!other.IsMap()) return fail(item) << "included file '" << path << "' is not a YAML mapping";
      const std::string other_dir = std::filesystem::path(path).parent_path().string();
      if (const YAML::Node inc = other["include"]) {
        include_stack_.push_back(path);
        Status nested = read_includes(inc, path, other_dir.empty() ? "." : other_dir, depth + 1);
        include_stack_.pop_back();
        FUSERT_RETURN_IF_ERROR(nested);
      }
      cur_file_ = path;  // a bad 'templates' key is in the included file
      FUSERT_RETURN_IF_ERROR(read_templates(other["templates"], path));
      cur_file_ = file;
    }
    return Status();
  }();
  cur_file_ = saved_file;
  return st;
}

Status Loader::read_inputs(const YAML::Node& list, ModelSpec* spec) {
  Graph& g = spec->graph;
  std::set<std::string> used;
  for (const YAML::Node& in : list) {
    FUSERT_RETURN_IF_ERROR(check_keys(in, {"name", "shape", "dtype"}, "an input"));
    FUSERT_RETURN_IF_ERROR(require_key(in, "name", "input name"));
    FUSERT_ASSIGN_OR_RETURN(std::string name, scalar(in["name"], dims_env_, "input name"));
    if (g.find_value(name) != kNoValue) return fail(in) << "duplicate input '" << name << "'";
    Value& v = g.value(g.add_value(name));
    v.is_graph_input = true;
    v.init = InitKind::kInput;
    v.loc = loc(in);
    if (!in["shape"] || !in["shape"].IsSequence()) return fail(in) << "input '" << name << "' needs a shape list";
    std::vector<std::string> syms;
    for (const YAML::Node& d : in["shape"]) {
      // A dimension is an integer or the name of a symbolic dim (no expressions: the run-time
      // shape must name each dim's value directly).
      if (d.IsScalar() && dims_env_.count(d.Scalar())) {
        syms.push_back(d.Scalar());
        used.insert(d.Scalar());
        v.shape.push_back(std::stoll(dims_env_[d.Scalar()]));
        continue;
      }
      if (d.IsScalar() && d.Scalar().find("${") != std::string::npos)
        return fail(d) << "input '" << name << "': a dimension is an integer or a name from 'dims', not an expression";
      Result<int64_t> dim = integer(d, dims_env_, "input dimension");
      if (!dim.ok() && d.IsScalar() && !d.Scalar().empty() && std::isalpha(static_cast<unsigned char>(d.Scalar()[0]))) {
        return fail(d) << "input '" << name << "': dimension '" << d.Scalar()
                       << "' is not declared in 'dims' (e.g. dims: {" << d.Scalar() << ": {min: 1, max: 64}})";
      }
      FUSERT_RETURN_IF_ERROR(dim.status());
      if (*dim < 1) return fail(d) << "input '" << name << "' dimension must be >= 1, got " << *dim;
      v.shape.push_back(*dim);
      syms.emplace_back();
    }
    v.shape_known = true;
    if (int64_t count = 0; !checked_numel(v.shape, &count)) {
      return fail(in["shape"]) << "input '" << name << "' " << shape_str(v.shape) << " exceeds " << kMaxTensorElements
                               << " elements";
    }
    std::string dt = in["dtype"] ? in["dtype"].Scalar() : "f32";
    if (!parse_dtype(dt, &v.dtype))
      return fail(in["dtype"]) << "unknown dtype '" << dt << "' (f32, f16, bf16, i64, i32)";
    g.inputs.push_back(g.find_value(name));
    spec->input_dims.push_back(std::move(syms));
  }
  if (g.inputs.empty()) return fail(list) << "the model needs at least one input";
  for (const SymbolicDim& d : spec->dims) {
    if (!used.count(d.name)) return fail(list) << "dim '" << d.name << "' is declared in 'dims' but no input uses it";
  }
  return Status();
}

Status Loader::read_preprocess(const YAML::Node& n, PreprocessSpec* p) {
  FUSERT_RETURN_IF_ERROR(
      check_keys(n, {"resize", "crop", "divisor", "mean", "std", "color", "layout"}, "'preprocess'"));
  Bindings none;
  p->present = true;
  try {
    if (n["resize"]) p->resize = n["resize"].as<int64_t>();
    if (n["crop"]) p->crop = n["crop"].as<int64_t>();
    if (n["divisor"]) p->divisor = n["divisor"].as<double>();
    if (n["mean"]) p->mean = n["mean"].as<std::vector<double>>();
    if (n["std"]) p->std = n["std"].as<std::vector<double>>();
    if (n["color"]) p->color = n["color"].as<std::string>();
    if (n["layout"]) p->layout = n["layout"].as<std::string>();
  } catch (const YAML::Exception& e) {
    return fail(n) << "bad 'preprocess' value: " << e.msg;
  }
  if (p->resize < 0 || p->resize > 16384)
    return fail(n["resize"]) << "'preprocess' resize must be in 0..16384, got " << p->resize;
  if (p->crop < 0 || p->crop > 16384)
    return fail(n["crop"]) << "'preprocess' crop must be in 0..16384, got " << p->crop;
  if (p->mean.size() != 3 || p->std.size() != 3) return fail(n) << "'preprocess' mean and std need 3 values";
  for (double s : p->std)
    if (s == 0) return fail(n) << "'preprocess' std must be non-zero";
  if (p->divisor == 0) return fail(n) << "'preprocess' divisor must be non-zero";
  if (p->color != "RGB" && p->color != "BGR") return fail(n) << "'preprocess' color must be RGB or BGR";
  if (p->layout != "NCHW") return fail(n) << "'preprocess' layout must be NCHW";
  return Status();
}

Status Loader::expand_list(const YAML::Node& list, const Bindings& env, bool inits, Graph& g, int depth) {
  if (!list.IsSequence()) return fail(list) << (inits ? "'initializers'" : "'nodes'") << " must be a list";
  for (const YAML::Node& item : list) {
    if (!item.IsMap()) return fail(item) << "each entry must be a mapping";
    if (item["use"]) {
      if (inits) return fail(item) << "'use' is only allowed in 'nodes'";
      FUSERT_RETURN_IF_ERROR(expand_use(item, env, g, depth));
    } else if (inits) {
      FUSERT_RETURN_IF_ERROR(add_initializer(item, env, g));
    } else {
      FUSERT_RETURN_IF_ERROR(add_node(item, env, g));
    }
  }
  return Status();
}

}  // namespace fusert::detail

namespace fusert {

Result<ModelSpec> load_root(const std::string& text, const std::string& name, const std::string& base_dir,
                            const DimValues* values) {
  ModelSpec spec;
  spec.path = name;
  spec.source_text = text;
  spec.base_dir = base_dir;
  try {
    YAML::Node root = YAML::Load(text);
    detail::Loader loader(name, base_dir, values);
    FUSERT_RETURN_IF_ERROR(loader.load(root, &spec));
  } catch (const YAML::Exception& e) {
    return error(StatusCode::kParseError)
           << name << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": malformed YAML: " << e.msg;
  }
  return spec;
}

Result<ModelSpec> load_model(const std::string& path) {
  FUSERT_RETURN_IF_ERROR(check_regular_file(path, "model file"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open model file";
  std::stringstream text;
  text << f.rdbuf();
  size_t slash = path.find_last_of('/');
  FUSERT_ASSIGN_OR_RETURN(
      ModelSpec spec, load_root(text.str(), path, slash == std::string::npos ? "." : path.substr(0, slash), nullptr));
  FUSERT_RETURN_IF_ERROR(mark_symbolic(spec));
  return spec;
}

Result<ModelSpec> load_model_from_string(const std::string& text, const std::string& name,
                                         const std::string& base_dir) {
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_root(text, name, base_dir, nullptr));
  FUSERT_RETURN_IF_ERROR(mark_symbolic(spec));
  return spec;
}

}  // namespace fusert
