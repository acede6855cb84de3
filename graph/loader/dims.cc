// Symbolic dims (models/FORMAT.md, "Symbolic dimensions"): the `dims:` section, the constants
// that depend on a dim (found by expanding the model at the range's ends), and a model
// expanded again at other values of its dims.
#include <cctype>
#include <cstring>

#include "graph/loader/loader_impl.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace fusert::detail {

// `dims: {batch: {min: 1, max: 64, opt: 1}}`: names usable as input dimensions and in `${...}`.
Status Loader::read_dims(const YAML::Node& map, ModelSpec* spec) {
  if (!map.IsMap()) return fail(map) << "'dims' must be a mapping of name -> {min, max, opt}";
  Bindings none;
  for (const auto& kv : map) {
    SymbolicDim d;
    d.name = kv.first.Scalar();
    bool ident = !d.name.empty() && !std::isdigit(static_cast<unsigned char>(d.name[0]));
    for (char ch : d.name) ident = ident && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_');
    if (!ident || d.name == "i")
      return fail(kv.first) << "dim name '" << d.name << "' must be an identifier other than 'i'";
    FUSERT_RETURN_IF_ERROR(check_keys(kv.second, {"min", "max", "opt"}, "a dim"));
    FUSERT_RETURN_IF_ERROR(require_key(kv.second, "max", "dim '" + d.name + "': 'max'"));
    FUSERT_ASSIGN_OR_RETURN(d.max, integer(kv.second["max"], none, "'max'"));
    if (kv.second["min"]) {
      FUSERT_ASSIGN_OR_RETURN(d.min, integer(kv.second["min"], none, "'min'"));
    }
    d.opt = d.min;
    if (kv.second["opt"]) {
      FUSERT_ASSIGN_OR_RETURN(d.opt, integer(kv.second["opt"], none, "'opt'"));
    }
    if (d.min < 1 || d.max < d.min || d.max > kMaxTensorElements || d.opt < d.min || d.opt > d.max) {
      return fail(kv.second) << "dim '" << d.name << "' needs 1 <= min <= opt <= max <= " << kMaxTensorElements
                             << ", got min " << d.min << ", opt " << d.opt << ", max " << d.max;
    }
    int64_t value = d.opt;
    if (values_) {
      auto it = values_->find(d.name);
      if (it == values_->end())
        return error(StatusCode::kInvalidArgument) << file_ << ": no value given for dim '" << d.name << "'";
      value = it->second;
      if (value < d.min || value > d.max) {
        return error(StatusCode::kInvalidArgument)
               << file_ << ": dim '" << d.name << "' = " << value << " is outside its range " << d.min << ".." << d.max;
      }
    }
    if (dims_env_.count(d.name)) return fail(kv.first) << "duplicate dim '" << d.name << "'";
    dims_env_[d.name] = std::to_string(value);
    spec->dim_values[d.name] = value;
    spec->dims.push_back(d);
  }
  return Status();
}

}  // namespace fusert::detail

namespace fusert {

namespace {

// `spec` again at `at`: its front end's expansion (ONNX), else the YAML text's.
Result<ModelSpec> expand(const ModelSpec& spec, const DimValues& at) {
  if (spec.expand_at) return spec.expand_at(at);
  return load_root(spec.source_text, spec.path, spec.base_dir, &at);
}

bool same_data(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

std::string dims_str_of(const DimValues& at) {
  std::string where;
  for (const auto& [k, v] : at) where += (where.empty() ? "" : ", ") + k + " = " + std::to_string(v);
  return where;
}

// The symbolic-dim machinery relies on one node structure for every value of the dims: only
// input shapes and constants may change.
Status check_same_structure(const ModelSpec& a, const ModelSpec& b, const DimValues& at) {
  auto where = [&] {
    std::string s;
    for (const auto& [k, v] : at) s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v);
    return s;
  };
  if (a.graph.nodes.size() != b.graph.nodes.size() || a.graph.values.size() != b.graph.values.size()) {
    return error(StatusCode::kInvalidArgument)
           << a.path << ": the model's nodes differ at " << where()
           << " (a symbolic dim may change input shapes and constants, not the graph, e.g. not a template's repeat)";
  }
  for (size_t i = 0; i < a.graph.nodes.size(); ++i) {
    const Node& x = a.graph.nodes[i];
    const Node& y = b.graph.nodes[i];
    if (x.name != y.name || x.op != y.op || x.inputs != y.inputs || x.outputs != y.outputs) {
      return error(StatusCode::kInvalidArgument) << x.loc.str() << ": node '" << x.name << "' differs at " << where()
                                                 << " (a symbolic dim may change input shapes and constants only)";
    }
  }
  return Status();
}

// Marks the constants of `spec` (loaded at each dim's opt) that differ when the model is
// expanded at every dim's min or at every dim's max.
Status mark_symbolic_constants(ModelSpec& spec) {
  DimValues first;
  for (int probe = 0; probe < 2; ++probe) {
    DimValues at;
    for (const SymbolicDim& d : spec.dims) {
      const int64_t end = probe == 0 ? d.min : d.max;
      at[d.name] = !d.open ? end : (d.probe > 0 ? d.probe : d.opt);
    }
    if (at == spec.dim_values || (probe == 1 && at == first)) continue;
    first = at;
    Result<ModelSpec> probed = expand(spec, at);
    if (!probed.ok()) {  // valid at opt, not at the range's other end
      return error(probed.status().code()) << probed.status().message() << " (with dims " << dims_str_of(at) << ")";
    }
    ModelSpec other = std::move(*probed);
    FUSERT_RETURN_IF_ERROR(check_same_structure(spec, other, at));
    for (size_t i = 0; i < spec.graph.values.size(); ++i) {
      Value& v = spec.graph.values[i];
      if (v.is_constant && !same_data(v.data, other.graph.values[i].data)) v.symbolic = true;
    }
  }
  return Status();
}

}  // namespace

Status mark_symbolic(ModelSpec& spec) { return spec.dims.empty() ? Status() : mark_symbolic_constants(spec); }

Result<ModelSpec> instantiate_model(const ModelSpec& base, const DimValues& values) {
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, expand(base, values));
  FUSERT_RETURN_IF_ERROR(check_same_structure(base, spec, values));
  for (size_t i = 0; i < spec.graph.values.size(); ++i) {
    Value& v = spec.graph.values[i];
    const Value& b = base.graph.values[i];
    v.symbolic = b.symbolic;
    // The range's ends did not move this constant but these values do (e.g. `${seq / 128}`):
    // the session folded it as a fixed constant, so this shape cannot be served correctly.
    if (v.is_constant && !v.symbolic && !same_data(v.data, b.data)) {
      return error(StatusCode::kUnsupported)
             << v.loc.str() << ": constant '" << v.name
             << "' depends on the dims in a way the range's ends do not show ("
             << "it changes at " << dims_str_of(values) << " only); make it depend on them monotonically";
    }
  }
  return spec;
}

}  // namespace fusert
