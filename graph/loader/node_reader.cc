// Template expansion (use/repeat/start/chain), node and initializer entries, typed attributes.
#include <cerrno>
#include <cstdint>
#include <cstdlib>

#include "graph/loader/loader_impl.h"

namespace fusert::detail {

namespace {

// Element i of an i32 / i8 / u8 constant from `a`; false unless it is an integer in the type's range.
bool set_small_int(Tensor* t, int64_t i, const AttrValue& a) {
  if (a.type != AttrType::kInt) return false;
  const DType d = t->dtype();
  const int64_t lo = d == DType::kU8 ? 0 : d == DType::kI8 ? -128 : INT32_MIN;
  const int64_t hi = d == DType::kU8 ? 255 : d == DType::kI8 ? 127 : INT32_MAX;
  if (a.i < lo || a.i > hi) return false;
  if (d == DType::kI32)
    static_cast<int32_t*>(t->raw())[i] = static_cast<int32_t>(a.i);
  else if (d == DType::kI8)
    static_cast<int8_t*>(t->raw())[i] = static_cast<int8_t>(a.i);
  else
    static_cast<uint8_t*>(t->raw())[i] = static_cast<uint8_t>(a.i);
  return true;
}

// Classifies a substituted scalar: int, float, or string (models/FORMAT.md, "Nodes").
AttrValue classify(const std::string& s) {
  AttrValue a;
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, 10);
  if (!s.empty() && *end == '\0' && errno != ERANGE) {  // beyond int64: a float (no integer constant takes it)
    a.type = AttrType::kInt;
    a.i = i;
    return a;
  }
  double f = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') {
    a.type = AttrType::kFloat;
    a.f = f;
    return a;
  }
  a.type = AttrType::kString;
  a.s = s;
  return a;
}

}  // namespace

Result<AttrValue> Loader::read_attr(const YAML::Node& n, const Bindings& env, const AttrSchema& schema,
                                    const std::string& node_name) const {
  AttrValue out;
  out.type = schema.type;
  auto wrong = [&](const std::string& got) -> Result<AttrValue> {
    return fail(n, StatusCode::kInvalidArgument) << "node '" << node_name << "': attribute '" << schema.name
                                                 << "' expects " << attr_type_name(schema.type) << ", got " << got;
  };
  bool list = schema.type == AttrType::kInts || schema.type == AttrType::kFloats;
  if (list != n.IsSequence()) return wrong(n.IsSequence() ? "a list" : "a scalar");
  if (!list) {
    FUSERT_ASSIGN_OR_RETURN(std::string s, scalar(n, env, "attribute value"));
    AttrValue a = classify(s);
    if (schema.type == AttrType::kString) {
      out.s = s;
      return out;
    }
    if (a.type == AttrType::kString) return wrong("string '" + s + "'");
    if (schema.type == AttrType::kInt && a.type != AttrType::kInt) return wrong("float " + s);
    out.i = a.i;
    out.f = a.type == AttrType::kInt ? static_cast<double>(a.i) : a.f;
    return out;
  }
  for (const YAML::Node& e : n) {
    FUSERT_ASSIGN_OR_RETURN(std::string s, scalar(e, env, "attribute element"));
    AttrValue a = classify(s);
    if (a.type == AttrType::kString) return wrong("a list holding '" + s + "'");
    if (schema.type == AttrType::kInts && a.type != AttrType::kInt) return wrong("a list holding float " + s);
    if (schema.type == AttrType::kInts)
      out.ints.push_back(a.i);
    else
      out.floats.push_back(a.type == AttrType::kInt ? static_cast<double>(a.i) : a.f);
  }
  return out;
}

Status Loader::add_node(const YAML::Node& n, const Bindings& env, Graph& g) {
  FUSERT_RETURN_IF_ERROR(check_keys(n, {"name", "op", "inputs", "outputs", "attrs", "fuse"}, "a node"));
  Node node;
  node.loc = loc(n);
  FUSERT_RETURN_IF_ERROR(require_key(n, "name", "node 'name'"));
  FUSERT_ASSIGN_OR_RETURN(node.name, scalar(n["name"], env, "node 'name'"));
  if (!node_names_.insert(node.name).second) return fail(n) << "duplicate node name '" << node.name << "'";
  FUSERT_RETURN_IF_ERROR(require_key(n, "op", "node '" + node.name + "': 'op'"));
  FUSERT_ASSIGN_OR_RETURN(std::string op, scalar(n["op"], env, "node 'op'"));
  if (!find_op(op, &node.op)) {
    return fail(n["op"], StatusCode::kUnsupported)
           << "node '" << node.name << "': unknown op '" << op << "'; known ops: " << known_op_names();
  }
  const OpInfo& info = op_info(node.op);
  for (const char* key : {"inputs", "outputs"}) {
    const YAML::Node list = n[key];
    if (!list || !list.IsSequence()) return fail(n) << "node '" << node.name << "' needs an '" << key << "' list";
    for (const YAML::Node& v : list) {
      FUSERT_ASSIGN_OR_RETURN(std::string name, scalar(v, env, key));
      bool is_input = key[0] == 'i';
      if (name.empty() && !is_input) return fail(v) << "node '" << node.name << "': empty output name";
      (is_input ? node.inputs : node.outputs).push_back(name.empty() ? kNoValue : g.add_value(name));
    }
  }
  if (node.outputs.empty() || static_cast<int>(node.outputs.size()) > info.max_outputs) {
    return fail(n) << "node '" << node.name << "' (" << op << ") has 1.." << info.max_outputs << " outputs, got "
                   << node.outputs.size();
  }
  int count = static_cast<int>(node.inputs.size());
  if (count < info.min_inputs || count > info.max_inputs) {
    return fail(n) << "node '" << node.name << "' (" << op << ") takes " << info.min_inputs << ".." << info.max_inputs
                   << " inputs, got " << count;
  }
  if (const YAML::Node attrs = n["attrs"]) {
    if (!attrs.IsMap()) return fail(attrs) << "node '" << node.name << "': 'attrs' must be a mapping";
    for (const auto& kv : attrs) {
      std::string key = kv.first.Scalar();
      const AttrSchema* schema = info.find_attr(key);
      if (!schema) {
        std::string list;
        for (const AttrSchema& a : info.attrs) list += (list.empty() ? "" : ", ") + a.name;
        return fail(kv.first, StatusCode::kInvalidArgument)
               << "node '" << node.name << "': " << op << " has no attribute '" << key
               << "' (attributes: " << (list.empty() ? "none" : list) << ")";
      }
      FUSERT_ASSIGN_OR_RETURN(node.attrs[key], read_attr(kv.second, env, *schema, node.name));
    }
  }
  for (const AttrSchema& a : info.attrs) {
    if (node.attrs.count(a.name)) continue;
    if (a.required)
      return fail(n, StatusCode::kInvalidArgument)
             << "node '" << node.name << "' (" << op << ") needs attribute '" << a.name << "'";
    node.attrs[a.name] = a.default_value;
  }
  if (n["fuse"]) {
    FUSERT_ASSIGN_OR_RETURN(std::string f, scalar(n["fuse"], env, "'fuse'"));
    if (f != "never" && f != "auto") return fail(n["fuse"]) << "'fuse' must be 'never' or 'auto', got '" << f << "'";
    node.fuse_never = f == "never";
  }
  g.nodes.push_back(std::move(node));
  return Status();
}

Status Loader::add_initializer(const YAML::Node& n, const Bindings& env, Graph& g) {
  FUSERT_RETURN_IF_ERROR(check_keys(n, {"name", "shape", "init", "dtype", "value"}, "an initializer"));
  FUSERT_RETURN_IF_ERROR(require_key(n, "name", "initializer 'name'"));
  FUSERT_ASSIGN_OR_RETURN(std::string name, scalar(n["name"], env, "initializer 'name'"));
  // A value that exists only because an earlier node reads it (nodes come in any order, so a
  // template used later may declare it) is not a duplicate; an input, initializer or node
  // output of that name is.
  if (ValueId prev = g.find_value(name); prev != kNoValue) {
    bool produced = false;
    for (const Node& node : g.nodes) {
      for (ValueId out : node.outputs) produced = produced || out == prev;
    }
    const Value& pv = g.value(prev);
    if (pv.is_initializer || pv.is_graph_input || produced)
      return fail(n) << "duplicate initializer or value '" << name << "'";
  }
  Value v;
  v.name = name;
  v.is_initializer = true;
  v.loc = loc(n);
  if (!n["shape"] || !n["shape"].IsSequence()) return fail(n) << "initializer '" << name << "' needs a 'shape' list";
  for (const YAML::Node& d : n["shape"]) {
    FUSERT_ASSIGN_OR_RETURN(int64_t dim, integer(d, env, "initializer dimension"));
    if (dim < 0) return fail(d) << "initializer '" << name << "' has a negative dimension";
    v.shape.push_back(dim);
  }
  v.shape_known = true;
  if (int64_t count = 0; !checked_numel(v.shape, &count)) {
    return fail(n["shape"]) << "initializer '" << name << "' " << shape_str(v.shape) << " exceeds "
                            << kMaxTensorElements << " elements";
  }
  v.init = v.shape.size() >= 2 ? InitKind::kKaiming : InitKind::kUniform;
  if (n["init"]) {
    FUSERT_ASSIGN_OR_RETURN(std::string k, scalar(n["init"], env, "'init'"));
    if (!parse_init_kind(k, &v.init))
      return fail(n["init"]) << "unknown init '" << k << "' (kaiming, uniform, bn_scale, bn_var, input, zeros, ones)";
  }
  if (n["dtype"]) {
    FUSERT_ASSIGN_OR_RETURN(std::string dt, scalar(n["dtype"], env, "'dtype'"));
    if (!parse_dtype(dt, &v.dtype)) return fail(n["dtype"]) << "unknown dtype '" << dt << "'";
  }
  if (const YAML::Node val = n["value"]) {
    v.is_constant = true;
    std::vector<YAML::Node> items;
    if (val.IsSequence())
      for (const YAML::Node& e : val) items.push_back(e);
    else
      items.push_back(val);
    if (static_cast<int64_t>(items.size()) != shape_numel(v.shape)) {
      return fail(val, StatusCode::kShapeMismatch)
             << "constant '" << name << "' has " << items.size() << " values for shape " << shape_str(v.shape);
    }
    v.data = Tensor(v.dtype, v.shape);
    for (size_t i = 0; i < items.size(); ++i) {
      FUSERT_ASSIGN_OR_RETURN(std::string s, scalar(items[i], env, "constant value"));
      AttrValue a = classify(s);
      if (a.type == AttrType::kString)
        return fail(items[i]) << "constant '" << name << "': '" << s << "' is not a number";
      double d = a.type == AttrType::kInt ? static_cast<double>(a.i) : a.f;
      if (v.dtype == DType::kI64) {
        if (a.type != AttrType::kInt)
          return fail(items[i]) << "constant '" << name << "': '" << s << "' is not an integer in i64's range";
        v.data.i64()[i] = a.i;
      } else if (v.dtype == DType::kF32) {
        v.data.f32()[i] = static_cast<float>(d);
      } else if (v.dtype == DType::kI32 || v.dtype == DType::kI8 || v.dtype == DType::kU8) {
        if (!set_small_int(&v.data, static_cast<int64_t>(i), a))
          return fail(items[i]) << "constant '" << name << "': '" << s << "' is not an integer in "
                                << dtype_name(v.dtype) << "'s range";
      } else {
        return fail(n["dtype"]) << "constants must be f32, i64, i32, i8 or u8";
      }
    }
  } else if (v.dtype != DType::kF32) {
    return fail(n) << "weight '" << name << "' must be f32 (weights are converted to f32 on load)";
  }
  ValueId id = g.add_value(name);
  g.value(id) = std::move(v);
  return Status();
}

Status Loader::expand_use(const YAML::Node& use, const Bindings& env, Graph& g, int depth) {
  FUSERT_RETURN_IF_ERROR(check_keys(use, {"use", "args", "repeat", "start", "chain"}, "a template use"));
  FUSERT_ASSIGN_OR_RETURN(std::string name, scalar(use["use"], env, "'use'"));
  auto it = templates_.find(name);
  if (it == templates_.end()) return fail(use["use"]) << "unknown template '" << name << "'";
  if (depth >= kMaxTemplateDepth)
    return fail(use) << "templates nested deeper than " << kMaxTemplateDepth << " (recursive use of '" << name << "'?)";
  const YAML::Node tpl = it->second;
  FUSERT_RETURN_IF_ERROR(check_keys(tpl, {"params", "initializers", "nodes", "description"}, "a template"));
  std::set<std::string> params;
  if (tpl["params"])
    for (const YAML::Node& p : tpl["params"]) params.insert(p.Scalar());
  int64_t repeat = 1, start = 0;
  if (use["repeat"]) {
    FUSERT_ASSIGN_OR_RETURN(repeat, integer(use["repeat"], env, "'repeat'"));
  }
  if (use["start"]) {
    FUSERT_ASSIGN_OR_RETURN(start, integer(use["start"], env, "'start'"));
  }
  if (repeat < 1 || repeat > 100000) return fail(use) << "'repeat' must be in 1..100000, got " << repeat;
  if (start < -1000000000 || start > 1000000000) return fail(use) << "'start' must be within +-1e9, got " << start;
  std::string chain_in, chain_out;
  if (const YAML::Node c = use["chain"]) {
    if (!c.IsSequence() || c.size() != 2) return fail(c) << "'chain' must be [input_param, output_param]";
    chain_in = c[0].Scalar();
    chain_out = c[1].Scalar();
    if (!params.count(chain_in) || !params.count(chain_out))
      return fail(c) << "'chain' names must be parameters of '" << name << "'";
  }
  const YAML::Node args = use["args"];
  if (args && !args.IsMap()) return fail(args) << "'args' must be a mapping";
  std::string prev_out;
  std::string saved_via = via_;
  for (int64_t k = 0; k < repeat; ++k) {
    Bindings outer = env;
    outer["i"] = std::to_string(start + k);
    Bindings inner;
    if (args) {
      for (const auto& kv : args) {
        std::string key = kv.first.Scalar();
        if (!params.count(key)) return fail(kv.first) << "template '" << name << "' has no parameter '" << key << "'";
        FUSERT_ASSIGN_OR_RETURN(inner[key], scalar(kv.second, outer, "argument"));
      }
    }
    if (k > 0 && !chain_in.empty()) inner[chain_in] = prev_out;
    for (const std::string& p : params) {
      if (!inner.count(p)) return fail(use) << "template '" << name << "': missing argument '" << p << "'";
    }
    inner["i"] = outer["i"];
    if (!chain_out.empty()) prev_out = inner[chain_out];
    std::string saved_file = cur_file_;
    via_ = "template '" + name + "' used at " + cur_file_ + ":" + std::to_string(use.Mark().line + 1) + ":" +
           std::to_string(use.Mark().column + 1) + (saved_via.empty() ? "" : ", " + saved_via);
    cur_file_ = template_files_[name];
    if (tpl["initializers"]) FUSERT_RETURN_IF_ERROR(expand_list(tpl["initializers"], inner, true, g, depth + 1));
    if (tpl["nodes"]) FUSERT_RETURN_IF_ERROR(expand_list(tpl["nodes"], inner, false, g, depth + 1));
    cur_file_ = saved_file;
    via_ = saved_via;
  }
  return Status();
}

}  // namespace fusert::detail
