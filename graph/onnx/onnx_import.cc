// The ONNX front end: ModelProto -> Graph. Nodes are read in the file's (topological) order;
// each is mapped onto the op table (onnx_ops.cc; the rules of onnx_rules.h for spellings that
// differ), its shapes inferred at once, and a node whose inputs are all constants is folded there and then,
// so that the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains exporters write become
// the constant shapes fusert's shape functions need.
#include "graph/onnx/onnx_import.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "graph/base/file.h"
#include "graph/data_dependent.h"
#include "graph/onnx/onnx_dims.h"
#include "graph/onnx/onnx_expand.h"
#include "graph/onnx/onnx_f64.h"
#include "graph/onnx/onnx_model_file.h"
#include "graph/onnx/onnx_ops.h"
#include "graph/onnx/onnx_tensor.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace fusert {

namespace {

using onnx_import::decode_tensor;
using onnx_import::default_opset;
using onnx_import::input_shape;
using onnx_import::parse_model;

class Importer {
 private:
  // Every --shape binding must name a graph input (a typo would otherwise be ignored silently).
  Status check_bindings(const onnx::GraphProto& gp, const std::set<std::string>& init_names,
                        const std::map<std::string, Shape>& bindings) const {
    std::set<std::string> inputs;
    for (const auto& in : gp.input())
      if (!init_names.count(in.name())) inputs.insert(in.name());
    for (const auto& b : bindings) {
      if (inputs.count(b.first)) continue;
      std::string names;
      for (const std::string& n : inputs) names += (names.empty() ? "'" : ", '") + n + "'";
      return error(StatusCode::kInvalidArgument)
             << path_ << ": --shape " << b.first << "=...: the model has no input of that name (its inputs: " << names
             << ")";
    }
    return Status();
  }

 public:
  Importer(std::string path, int64_t opset, const std::vector<SymbolicDim>& dims, const DimValues* at, bool f64_as_f32)
      : path_(std::move(path)), opset_(opset), at_(at), f64_as_f32_(f64_as_f32) {
    for (const SymbolicDim& d : dims) dims_[d.name] = d;
    base_dir_ = std::filesystem::path(path_).parent_path().string();
    if (base_dir_.empty()) base_dir_ = ".";
  }

  Status run(const onnx::ModelProto& m, const std::map<std::string, Shape>& bindings, ModelSpec* spec) {
    const onnx::GraphProto& gp = m.graph();
    FUSERT_RETURN_IF_ERROR(onnx_import::check_supported(gp, opset_, path_, f64_as_f32_));
    Graph& g = spec->graph;
    g.name = gp.name().empty() ? std::filesystem::path(path_).stem().string() : gp.name();
    g.source_file = path_;
    for (const auto& o : gp.output()) outputs_.insert(o.name());
    std::set<std::string> init_names;
    for (const auto& t : gp.initializer()) {
      init_names.insert(t.name());
      FUSERT_ASSIGN_OR_RETURN(Tensor data, decode_tensor(t, base_dir_, "initializer '" + t.name() + "'"));
      add_constant(g, t.name(), std::move(data));
    }
    FUSERT_RETURN_IF_ERROR(check_bindings(gp, init_names, bindings));
    for (const auto& in : gp.input()) {
      if (init_names.count(in.name())) continue;  // opsets < 9 list initializers as inputs too
      DType dt;
      const int et = in.type().tensor_type().elem_type();
      if (!onnx_import::dtype_of(et, &dt) || (et == onnx::TensorProto::DOUBLE && !f64_as_f32_) ||
          et == onnx::TensorProto::FLOAT16 || et == onnx::TensorProto::BFLOAT16) {
        return error(StatusCode::kUnsupported)
               << path_ << ": input '" << in.name() << "' is " << onnx_import::elem_type_name(et)
               << " (fusert's inputs are float, int64, int32, int8, uint8 or bool"
               << (et == onnx::TensorProto::DOUBLE ? "; SessionOptions::f64_as_f32, infer --f64-as-f32, runs a "
                                                     "float64 model in float32"
                                                   : "")
               << ")";
      }
      // Dims kept symbolic take their value at `at` (each one's opt when null) first.
      std::vector<std::string> symbols;
      auto sym = bindings;
      if (!bindings.count(in.name()) && in.type().tensor_type().has_shape()) {
        const auto& shp = in.type().tensor_type().shape();
        Shape bound;
        bool any = false;
        for (int d = 0; d < shp.dim_size(); ++d) {
          const std::string p = onnx_import::dim_symbol(in, d);
          const auto it = dims_.find(p);
          const bool named = it != dims_.end() && !(it->second.open && onnx_import::dim_fixed(shp.dim(d)));
          symbols.push_back(named ? p : "");
          any |= named;
          used_.insert(named ? p : "");
          const int64_t fixed = shp.dim(d).dim_value() > 0 ? shp.dim(d).dim_value() : (d == 0 ? 1 : -1);
          bound.push_back(named ? (at_ ? at_->at(p) : it->second.opt) : fixed);
        }
        const bool complete = std::find(bound.begin(), bound.end(), -1) == bound.end();
        if (any && complete) sym[in.name()] = bound;
      }
      FUSERT_ASSIGN_OR_RETURN(Shape s, input_shape(in, sym, path_));
      spec->input_dims.push_back(symbols.empty() ? std::vector<std::string>(s.size()) : symbols);
      Value& v = g.value(g.add_value(in.name()));
      v.dtype = dt;
      v.shape = s;
      v.shape_known = true;
      v.is_graph_input = true;
      v.loc = SourceLoc{path_, 0, 0, "input '" + in.name() + "'"};
      g.inputs.push_back(g.find_value(in.name()));
    }
    for (int i = 0; i < gp.node_size(); ++i) FUSERT_RETURN_IF_ERROR(add_node(g, gp.node(i), i, opset_));
    for (const auto& o : gp.output()) {
      const ValueId id = g.find_value(o.name());
      if (id == kNoValue || (g.value(id).producer < 0 && !g.value(id).is_graph_input)) {
        return error(StatusCode::kUnsupported) << path_ << ": graph output '" << o.name()
                                               << "' is not computed by a node (a constant or missing output)";
      }
      g.outputs.push_back(id);
    }
    g.rebuild_links();
    FUSERT_RETURN_IF_ERROR(topo_sort(g));
    FUSERT_RETURN_IF_ERROR(infer_shapes(g));
    return verify_graph(g);
  }

 private:
  void add_constant(Graph& g, const std::string& name, Tensor data) {
    Value& v = g.value(g.add_value(name));
    v.dtype = data.dtype();
    v.shape = data.shape();
    v.shape_known = true;
    v.is_initializer = true;
    v.is_constant = true;
    v.producer = -1;
    v.data = std::move(data);
    v.loc = SourceLoc{path_, 0, 0, "initializer '" + name + "'"};
  }

  // The pairs of an expansion (a run-time If's branch outputs) whose values are both imported
  // must agree in shape and dtype.
  static Status check_same_shapes(const Graph& g, const onnx_import::Expansion& e, const SourceLoc& loc) {
    for (const auto& [a, b] : e.same_shape) {
      const ValueId ia = g.find_value(a), ib = g.find_value(b);
      if (ia == kNoValue || ib == kNoValue || !g.value(ia).shape_known || !g.value(ib).shape_known) continue;
      const Value &va = g.value(ia), &vb = g.value(ib);
      if (va.shape != vb.shape || va.dtype != vb.dtype) {
        return error(StatusCode::kUnsupported)
               << loc.str() << ": the branches give " << dtype_name(va.dtype) << " " << shape_str(va.shape) << " ('"
               << a << "') and " << dtype_name(vb.dtype) << " " << shape_str(vb.shape) << " ('" << b
               << "'); fusert runs an If whose condition is known at run time only as both branches and a "
               << "select, which needs one shape and dtype";
      }
    }
    return Status();
  }

  // Adds node `i` (written in `opset`), infers its shapes and folds it when its inputs are all
  // constants; a node imported as several (onnx_expand.h) adds those.
  Status add_node(Graph& g, const onnx::NodeProto& np, int i, int64_t opset) {
    onnx_import::Mapped mapped;
    const std::string name = np.name().empty() ? np.op_type() + "_" + std::to_string(i) : np.name();
    const SourceLoc loc{path_, 0, 0, "node #" + std::to_string(i) + " '" + name + "' (" + np.op_type() + ")"};
    if (f64_as_f32_) {  // one copy of the node, imported instead when it names float64
      onnx::NodeProto demoted = np;
      if (onnx_import::f64_as_f32(&demoted)) return add_node(g, demoted, i, opset);
    }
    FUSERT_ASSIGN_OR_RETURN(std::optional<onnx_import::Expansion> expanded,
                            onnx_import::expand_node(g, np, opset, name, loc));
    if (expanded) {
      for (auto& [value, t] : expanded->constants) add_constant(g, value, std::move(t));
      const int64_t at = expanded->opset ? expanded->opset : opset_;
      for (const onnx::NodeProto& part : expanded->nodes) {
        FUSERT_RETURN_IF_ERROR(check_same_shapes(g, *expanded, loc));
        FUSERT_RETURN_IF_ERROR(add_node(g, part, i, at));
      }
      return Status();
    }
    const size_t values_before = g.values.size();
    FUSERT_RETURN_IF_ERROR(onnx_import::map_node(g, np, opset, name, loc, base_dir_, &mapped));
    std::set<std::string> deps;  // the counts this node's inputs (values or shapes) follow
    for (const std::string& in : np.input()) {
      auto it = counted_.find(in);
      if (it != counted_.end()) deps.insert(it->second.begin(), it->second.end());
    }
    for (size_t v = values_before; !deps.empty() && v < g.values.size(); ++v) {  // e.g. Squeeze's shape
      if (!g.values[v].data.empty()) counted_[g.values[v].name] = deps;
    }
    if (mapped.constant) {  // Constant, Shape, Size, ConstantOfShape, Range: a value, no node
      if (!deps.empty()) counted_[np.output(0)] = deps;
      if (outputs_.count(np.output(0))) {
        // A graph output must be computed by a step: an Identity copies the constant into it.
        std::string value = np.output(0) + ".value";
        while (g.find_value(value) != kNoValue) value += "_";
        add_constant(g, value, std::move(*mapped.constant));
        if (!deps.empty()) counted_[value] = deps;
        Node id;
        find_op("Identity", &id.op);
        id.name = name;
        id.loc = loc;
        id.inputs = {g.find_value(value)};
        id.outputs = {g.add_value(np.output(0))};
        if (!node_names_.insert(id.name).second) id.name += "_" + std::to_string(i);
        g.nodes.push_back(std::move(id));
        Node& added = g.nodes.back();
        g.value(added.outputs[0]).producer = static_cast<int>(g.nodes.size() - 1);
        return infer_node_shapes(g, added);
      }
      add_constant(g, np.output(0), std::move(*mapped.constant));
      return Status();
    }
    Node& n = mapped.node;
    n.name = name;
    n.loc = loc;
    if (!node_names_.insert(n.name).second) n.name += "_" + std::to_string(i);
    g.nodes.push_back(std::move(n));
    Node& added = g.nodes.back();
    for (ValueId out : added.outputs) g.value(out).producer = static_cast<int>(g.nodes.size() - 1);
    if (is_data_dependent(g, added)) {  // graph/data_dependent.h
      for (const SymbolicDim& d : shape_counts(g, added, at_)) {
        counts_.push_back(d);
        deps.insert(d.name);
      }
    }
    for (ValueId out : added.outputs)
      if (!deps.empty()) counted_[g.value(out).name] = deps;
    FUSERT_RETURN_IF_ERROR(infer_node_shapes(g, added));
    const bool is_output = outputs_.count(g.value(added.outputs[0]).name) > 0;
    // A DequantizeLinear of constants (a QDQ model's weights) stays a node: the qdq_conv rewrite reads
    // the int8 weights through it; canonicalisation folds what it leaves.
    if (added.outputs.size() == 1 && !is_output && added.op != OpKind::kDequantizeLinear) {
      if (std::optional<Tensor> t = fold_constant_node(g, added)) {
        const std::string out = g.value(added.outputs[0]).name;
        g.nodes.pop_back();
        add_constant(g, out, std::move(*t));
      }
    }
    return Status();
  }

  std::string path_, base_dir_;
  int64_t opset_;
  const DimValues* at_;
  bool f64_as_f32_;
  std::map<std::string, SymbolicDim> dims_;

 public:
  std::set<std::string> used_;       ///< dim_params of the inputs kept symbolic
  std::vector<SymbolicDim> counts_;  ///< the data-dependent nodes' counts, in graph order
  /// Per value: the counts it follows (downstream of their ops, or folded from a shape that is).
  std::map<std::string, std::set<std::string>> counted_;
  std::set<std::string> outputs_, node_names_;
};

}  // namespace

namespace {

// The model at `at` (each symbolic dim's opt when null); `parsed` is the file's ModelProto when
// already read, else it is read here.
Result<ModelSpec> load_onnx_at(const std::string& path, const onnx::ModelProto* parsed,
                               const std::map<std::string, Shape>& input_shapes, const std::vector<SymbolicDim>& dims,
                               const DimValues* at, bool f64,
                               const std::shared_ptr<const onnx::ModelProto>& in_memory = nullptr) {
  onnx::ModelProto read;
  if (!parsed) {
    FUSERT_ASSIGN_OR_RETURN(read, parse_model(path));
  }
  const onnx::ModelProto& m = parsed ? *parsed : read;
  FUSERT_ASSIGN_OR_RETURN(int64_t opset, default_opset(m, path));
  ModelSpec spec;
  spec.path = path;
  spec.base_dir = std::filesystem::path(path).parent_path().string();
  if (!m.doc_string().empty()) spec.description = m.doc_string();
  Importer imp(path, opset, dims, at, f64);
  FUSERT_RETURN_IF_ERROR(imp.run(m, input_shapes, &spec));
  for (const SymbolicDim& d : dims) {
    if (!imp.used_.count(d.name) && !d.open) {
      return error(StatusCode::kInvalidArgument)
             << path << ": --dim " << d.name << ": no input dimension of the model is named so (dim_param)";
    }
    if (d.min < 1 || d.opt < d.min || d.opt > d.max) {
      return error(StatusCode::kInvalidArgument) << path << ": --dim " << d.name << "=" << d.min << ":" << d.max << ":"
                                                 << d.opt << ": expected 1 <= min <= opt <= max";
    }
    spec.dims.push_back(d);
    spec.dim_values[d.name] = at ? at->at(d.name) : d.opt;
  }
  for (Value& v : spec.graph.values) {  // constants folded from a count: recomputed per count
    auto it = imp.counted_.find(v.name);
    if (it == imp.counted_.end() || v.data.empty()) continue;
    spec.count_constants[v.name] = std::vector<std::string>(it->second.begin(), it->second.end());
    v.symbolic = true;
  }
  for (const Node& n : spec.graph.nodes) {  // the data-dependent counts, at the values shaped at
    if (!is_data_dependent(spec.graph, n)) continue;
    size_t k = 0;  // an op whose shape is computed: one count per output dim
    for (const SymbolicDim& d : imp.counts_) {
      if (d.producer != n.name) continue;
      spec.dims.push_back(d);
      spec.dim_values[d.name] = is_shape_computed(n) ? n.attr_ints("counts").at(k++) : n.attr_i("count");
    }
  }
  if (spec.dims.empty()) {
    spec.input_dims.clear();
    return spec;
  }
  spec.expand_at = [path, input_shapes, dims, f64, in_memory](const DimValues& v) {      // the file read again
    return load_onnx_at(path, in_memory.get(), input_shapes, dims, &v, f64, in_memory);  // (a branch: kept)
  };
  return spec;
}

std::string open_str(const std::vector<SymbolicDim>& dims) {
  std::string s;
  for (const SymbolicDim& d : dims)
    if (d.open) s += (s.empty() ? "" : ", ") + d.name + " = " + std::to_string(d.opt);
  return s;
}

std::vector<SymbolicDim> first_dims(std::vector<SymbolicDim> dims, const std::vector<onnx_import::OpenDim>& open) {
  for (const onnx_import::OpenDim& o : open) dims.push_back(o.dim);
  return dims;
}

// The model with its open dims at the first optimisation point it imports at. An error that
// changes with the size tries the next sizes; one that is the same at two sizes (an unsupported
// op, a bad --dim) is the model's and is returned as it is; a file that does not parse at once.
Result<ModelSpec> import_open(const std::string& path, const onnx::ModelProto& m,
                              const std::map<std::string, Shape>& input_shapes, const std::vector<SymbolicDim>& dims,
                              const std::vector<onnx_import::OpenDim>& open, bool f64) {
  if (open.empty()) return load_onnx_at(path, &m, input_shapes, dims, nullptr, f64);
  Status first;
  std::vector<SymbolicDim> all;
  std::string tried;
  int attempts = 0;
  for (int k = 0; k < onnx_import::kOpenAttempts; ++k) {
    all = dims;
    for (const onnx_import::OpenDim& o : open) {
      all.push_back(o.dim);
      all.back().opt = onnx_import::open_opt(o, k);
    }
    if (open_str(all) == tried) continue;  // only batch dims: one size
    tried = open_str(all);
    Result<ModelSpec> spec = load_onnx_at(path, &m, input_shapes, all, nullptr, f64);
    if (spec.ok()) return spec;
    const StatusCode c = spec.status().code();
    if (c == StatusCode::kParseError || c == StatusCode::kNotFound || c == StatusCode::kIoError) return spec.status();
    ++attempts;
    if (k == 0) {
      first = spec.status();
    } else if (spec.status().message() == first.message()) {
      return first;  // the same error at another size: the model's, not the size's
    }
  }
  if (attempts < 2) return first;
  return error(first.code()) << first.message() << " (with the input dims no --shape binds at "
                             << open_str(first_dims(dims, open)) << " and the other sizes fusert tries; bind them with "
                             << "--shape or --dim)";
}

// Probes the open dims at a second size (three tries) for the constants that follow them; a
// model that imports at no second size keeps them unprobed (a run at another size whose
// constants differ is then an error, never a wrong result).
Status probe_open(ModelSpec& spec) {
  bool any = false;
  for (const SymbolicDim& d : spec.dims) any |= d.open;
  if (!any) return mark_symbolic(spec);
  Status st;
  for (int k = 0; k < 3; ++k) {
    for (SymbolicDim& d : spec.dims) {
      if (!d.open || d.data_dependent) continue;  // a count keeps the probe its import chose
      onnx_import::OpenDim o;
      o.dim = d;
      d.probe = onnx_import::open_probe(o, k);
    }
    st = mark_symbolic(spec);
    if (st.ok()) return st;
  }
  for (SymbolicDim& d : spec.dims) d.probe = 0;
  Status unprobed = mark_symbolic(spec);  // the declared dims' ends alone
  return unprobed.ok() ? Status() : st;
}

}  // namespace

Result<ModelSpec> load_onnx_bytes(const std::string& bytes, const std::string& name,
                                  const std::map<std::string, Shape>& input_shapes) {
  auto m = std::make_shared<onnx::ModelProto>();
  if (!m->ParseFromString(bytes) || !m->has_graph())
    return error(StatusCode::kParseError) << name << ": not a serialized ONNX model";
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_onnx_at(name, m.get(), input_shapes, {}, nullptr, false, m));
  FUSERT_RETURN_IF_ERROR(mark_symbolic(spec));
  return spec;
}

Result<ModelSpec> load_onnx(const std::string& path, const std::map<std::string, Shape>& input_shapes,
                            const std::vector<SymbolicDim>& dims, bool open_dims, bool f64_as_f32) {
  if (!open_dims) {
    FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_onnx_at(path, nullptr, input_shapes, dims, nullptr, f64_as_f32));
    FUSERT_RETURN_IF_ERROR(mark_symbolic(spec));
    return spec;
  }
  FUSERT_ASSIGN_OR_RETURN(onnx::ModelProto m, parse_model(path));
  const std::vector<onnx_import::OpenDim> open = onnx_import::open_dims(m.graph(), input_shapes, dims);
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, import_open(path, m, input_shapes, dims, open, f64_as_f32));
  FUSERT_RETURN_IF_ERROR(probe_open(spec));
  return spec;
}

}  // namespace fusert
