// fusert-convert: an ONNX model to fusert's YAML format (models/FORMAT.md) plus a safetensors
// weights file, so that an imported model joins the YAML zoo and reads like the hand-written
// ones: one line per input, initializer and node, attributes only where they differ from the op
// table's defaults, small integer constants (shapes, axes) inline, weights in the safetensors.
//
//   fusert-convert model.onnx -o model.yaml [--weights model.safetensors] [--shape NAME=DxDx...]
//
// The graph written is the imported one: shape subgraphs folded, Squeeze as Reshape, symbolic
// dims bound (--shape). Exit 0 on success, 1 on an error (named), 2 on bad usage.
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "graph/onnx/onnx_import.h"
#include "graph/op.h"

namespace fs = std::filesystem;
using namespace fusert;

namespace {

constexpr int64_t kInlineFloats = 4;  // f32 constants up to this many elements (scalars) are written inline

const char* kUsage =
    "usage: fusert-convert MODEL.onnx -o MODEL.yaml [--weights W.safetensors] [--shape NAME=DxDx...]\n"
    "Writes the ONNX model as fusert YAML (models/FORMAT.md) and its weights as safetensors\n"
    "(default: the YAML's name with .safetensors). --shape binds an input's symbolic dims.\n";

bool same_attr(const AttrValue& a, const AttrValue& b) {
  return a.i == b.i && a.f == b.f && a.ints == b.ints && a.floats == b.floats && a.s == b.s;
}

void emit_attr(YAML::Emitter& e, const AttrValue& a) {
  switch (a.type) {
    case AttrType::kInt:
      e << a.i;
      break;
    case AttrType::kFloat:
      e << a.f;
      break;
    case AttrType::kInts:
      e << YAML::Flow << YAML::BeginSeq;
      for (int64_t v : a.ints) e << v;
      e << YAML::EndSeq;
      break;
    case AttrType::kFloats:
      e << YAML::Flow << YAML::BeginSeq;
      for (double v : a.floats) e << v;
      e << YAML::EndSeq;
      break;
    case AttrType::kString:
      e << a.s;
      break;
  }
}

void emit_shape(YAML::Emitter& e, const Shape& s) {
  e << YAML::Flow << YAML::BeginSeq;
  for (int64_t d : s) e << d;
  e << YAML::EndSeq;
}

// An initializer is written inline (a constant) or goes to the weights file.
bool inline_constant(const Value& v) {
  return v.data.dtype() == DType::kI64 || (v.data.dtype() == DType::kF32 && v.data.numel() <= kInlineFloats);
}

Status write_safetensors(const std::string& path, const Graph& g, const std::vector<ValueId>& weights) {
  nlohmann::json header = nlohmann::json::object();
  size_t offset = 0;
  for (ValueId id : weights) {
    const Value& v = g.value(id);
    header[v.name] = {
        {"dtype", "F32"}, {"shape", v.data.shape()}, {"data_offsets", {offset, offset + v.data.nbytes()}}};
    offset += v.data.nbytes();
  }
  header["__metadata__"] = {{"format", "pt"}, {"producer", "fusert-convert"}};
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::ofstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot write";
  const uint64_t n = h.size();
  f.write(reinterpret_cast<const char*>(&n), 8);  // little-endian hosts only (x86-64, aarch64)
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (ValueId id : weights) f.write(static_cast<const char*>(g.value(id).data.raw()), g.value(id).data.nbytes());
  if (!f) return error(StatusCode::kIoError) << path << ": write failed";
  return Status();
}

// Initializers a node reads (the import keeps the intermediates of the chains it folded), in the
// order the nodes first read them, as a hand-written model declares them; each with the
// seeded-init kind its use asks for (BatchNormalization's scale and variance), so that
// `infer --seeded` gives a sane model too.
std::vector<ValueId> used_initializers(const Graph& g, std::map<ValueId, const char*>* init_kind) {
  std::vector<ValueId> inits;
  std::set<ValueId> seen;
  for (const Node& n : g.nodes) {
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const ValueId id = n.inputs[k];
      if (id == kNoValue || !g.value(id).is_initializer || !seen.insert(id).second) continue;
      inits.push_back(id);
      if (op_name(n.op) == std::string("BatchNormalization") && (k == 1 || k == 4)) {
        (*init_kind)[id] = k == 1 ? "bn_scale" : "bn_var";
      }
    }
  }
  return inits;
}

void emit_inputs_outputs(YAML::Emitter& e, const Graph& g) {
  e << YAML::Key << "inputs" << YAML::Value << YAML::BeginSeq;
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << v.name << YAML::Key << "shape"
      << YAML::Value;
    emit_shape(e, v.shape);
    e << YAML::Key << "dtype" << YAML::Value << dtype_name(v.dtype) << YAML::EndMap;
  }
  e << YAML::EndSeq << YAML::Key << "outputs" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (ValueId id : g.outputs) e << g.value(id).name;
  e << YAML::EndSeq;
}

// One initializer: small constants inline (their values), the others by shape (and init kind).
void emit_initializer(YAML::Emitter& e, const Value& v, const char* init_kind) {
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << v.name << YAML::Key << "shape"
    << YAML::Value;
  emit_shape(e, v.data.shape());
  if (inline_constant(v)) {
    e << YAML::Key << "dtype" << YAML::Value << dtype_name(v.data.dtype()) << YAML::Key << "value" << YAML::Value
      << YAML::Flow << YAML::BeginSeq;
    for (int64_t i = 0; i < v.data.numel(); ++i) {
      if (v.data.dtype() == DType::kI64) {
        e << v.data.i64()[i];
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", v.data.f32()[i]);  // round-trips every float
        e << buf;
      }
    }
    e << YAML::EndSeq;
  } else if (init_kind) {
    e << YAML::Key << "init" << YAML::Value << init_kind;
  }
  e << YAML::EndMap;
}

// One node: op, inputs, outputs, and the attributes that differ from the op table's defaults.
void emit_node(YAML::Emitter& e, const Graph& g, const Node& n) {
  e << YAML::Flow << YAML::BeginMap << YAML::Key << "name" << YAML::Value << n.name << YAML::Key << "op" << YAML::Value
    << op_name(n.op);
  for (const char* key : {"inputs", "outputs"}) {
    e << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (ValueId id : key[0] == 'i' ? n.inputs : n.outputs) e << (id == kNoValue ? std::string() : g.value(id).name);
    e << YAML::EndSeq;
  }
  bool any = false;
  for (const AttrSchema& s : op_info(n.op).attrs) {
    const auto it = n.attrs.find(s.name);
    if (it == n.attrs.end() || (!s.required && same_attr(it->second, s.default_value))) continue;
    if (!any) e << YAML::Key << "attrs" << YAML::Value << YAML::Flow << YAML::BeginMap;
    any = true;
    e << YAML::Key << s.name << YAML::Value;
    emit_attr(e, it->second);
  }
  if (any) e << YAML::EndMap;
  e << YAML::EndMap;
}

// The model, the YAML and the weights must be three different files: writing one over another
// would lose it.
Status check_paths(const std::string& in, const std::string& out, const std::string& weights) {
  const auto same = [](const std::string& a, const std::string& b) {
    std::error_code ec;
    return fs::weakly_canonical(a, ec) == fs::weakly_canonical(b, ec);
  };
  if (same(out, in))
    return error(StatusCode::kInvalidArgument) << out << ": -o would overwrite the model being converted";
  if (same(weights, in))
    return error(StatusCode::kInvalidArgument) << weights << ": --weights would overwrite the model being converted";
  if (same(weights, out))
    return error(StatusCode::kInvalidArgument) << weights << ": --weights and -o name the same file";
  return Status();
}

Status convert(const std::string& in, const std::string& out, std::string weights,
               const std::map<std::string, Shape>& shapes) {
  if (weights.empty()) weights = fs::path(out).replace_extension(".safetensors").string();
  FUSERT_RETURN_IF_ERROR(check_paths(in, out, weights));
  FUSERT_ASSIGN_OR_RETURN(ModelSpec m, load_onnx(in, shapes));
  const Graph& g = m.graph;
  for (const SymbolicDim& d : m.dims)  // the YAML holds the shapes the import bound
    std::fprintf(stderr,
                 "fusert-convert: note: dim '%s' is symbolic in %s; the YAML fixes it at %lld (--shape chooses)\n",
                 d.name.c_str(), in.c_str(), static_cast<long long>(d.opt));
  YAML::Emitter e;
  e << YAML::BeginMap << YAML::Key << "fusert" << YAML::Value << 1;
  e << YAML::Key << "name" << YAML::Value << g.name;
  e << YAML::Key << "description" << YAML::Value
    << ("Converted by fusert-convert from " + fs::path(in).filename().string() + " (weights in " +
        fs::path(weights).filename().string() + ").");
  std::map<ValueId, const char*> init_kind;
  const std::vector<ValueId> inits = used_initializers(g, &init_kind);
  std::vector<ValueId> to_file;
  for (ValueId id : inits) {
    const Value& v = g.value(id);
    if (v.data.dtype() != DType::kF32 && v.data.dtype() != DType::kI64) {
      return error(StatusCode::kUnsupported) << in << ": constant '" << v.name << "' is " << dtype_name(v.data.dtype())
                                             << "; the YAML format holds f32 and i64 constants";
    }
    if (!inline_constant(v)) to_file.push_back(id);
  }
  if (!to_file.empty()) {
    e << YAML::Key << "weights" << YAML::Value
      << fs::relative(fs::absolute(weights), fs::absolute(out).parent_path()).string();
  }
  emit_inputs_outputs(e, g);
  e << YAML::Key << "initializers" << YAML::Value << YAML::BeginSeq;
  for (ValueId id : inits) emit_initializer(e, g.value(id), init_kind.count(id) ? init_kind.at(id) : nullptr);
  e << YAML::EndSeq << YAML::Key << "nodes" << YAML::Value << YAML::BeginSeq;
  for (const Node& n : g.nodes) emit_node(e, g, n);
  e << YAML::EndSeq << YAML::EndMap;
  if (!e.good()) return error(StatusCode::kInternal) << "YAML emitter: " << e.GetLastError();
  // The weights first: a model file is written only when the weights it names are.
  if (!to_file.empty()) FUSERT_RETURN_IF_ERROR(write_safetensors(weights, g, to_file));
  std::ofstream f(out);
  if (!f) return error(StatusCode::kIoError) << out << ": cannot write";
  f << e.c_str() << "\n";
  if (!f) return error(StatusCode::kIoError) << out << ": write failed";
  std::printf("wrote %s: %zu inputs, %zu nodes, %zu initializers (%zu in %s)\n", out.c_str(), g.inputs.size(),
              g.nodes.size(), inits.size(), to_file.size(), to_file.empty() ? "none" : weights.c_str());
  return Status();
}

}  // namespace

int main(int argc, char** argv) {
  std::string in, out, weights;
  std::map<std::string, Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if ((a == "-o" || a == "--output") && has) {
      out = argv[++i];
    } else if (a == "--weights" && has) {
      weights = argv[++i];
    } else if (a == "--shape" && has) {
      if (const Status st = parse_shape_binding(argv[++i], &shapes); !st.ok()) {
        std::fprintf(stderr, "fusert-convert: %s\n", st.message().c_str());
        return 2;
      }
    } else if (a[0] != '-' && in.empty()) {
      in = a;
    } else {
      std::fprintf(stderr, "fusert-convert: unexpected argument '%s'\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (in.empty() || out.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const Status st = convert(in, out, weights, shapes);
  if (!st.ok()) {
    std::fprintf(stderr, "fusert-convert: error: %s\n", st.to_string().c_str());
    return 1;
  }
  return 0;
}
