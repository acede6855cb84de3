// An ONNX model file and its inputs (internal to graph/onnx): the ModelProto parsed, its default
// opset checked, a graph input's shape from its dims and the --shape bindings; and the public
// helpers of onnx_import.h that read files or flags (is_onnx_path, parse_shape_binding,
// read_onnx_tensor).
#include "graph/onnx/onnx_model_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "graph/base/file.h"
#include "graph/onnx/onnx_import.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert {

bool is_onnx_path(const std::string& path) { return path.size() > 5 && path.compare(path.size() - 5, 5, ".onnx") == 0; }

// "input=1x3x224x224" into bindings["input"] = {1, 3, 224, 224}.
Status parse_shape_binding(const std::string& v, std::map<std::string, std::vector<int64_t>>* bindings) {
  const size_t eq = v.find('=');
  const auto bad = [&v]() -> Status {
    return error(StatusCode::kInvalidArgument)
           << "--shape: expected NAME=DxDx... (e.g. input=1x3x224x224), got '" << v << "'";
  };
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) return bad();
  std::vector<int64_t> dims;
  std::stringstream ss(v.substr(eq + 1));
  std::string d;
  while (std::getline(ss, d, 'x')) {
    if (d.empty() || d.size() > 9 || d.find_first_not_of("0123456789") != std::string::npos) return bad();
    dims.push_back(std::stoll(d));
  }
  (*bindings)[v.substr(0, eq)] = dims;
  return Status();
}

}  // namespace fusert

namespace fusert::onnx_import {

Result<onnx::ModelProto> parse_model(const std::string& path) {
  FUSERT_RETURN_IF_ERROR(check_regular_file(path, "ONNX model"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open the ONNX model";
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&f)) {
    return error(StatusCode::kParseError) << path << ": not an ONNX model (the protobuf ModelProto does not parse; "
                                          << "truncated or another format)";
  }
  if (!m.has_graph()) return error(StatusCode::kParseError) << path << ": the ONNX model has no graph";
  return m;
}

// The default domain's opset; other domains are refused (their ops are not ONNX's).
Result<int64_t> default_opset(const onnx::ModelProto& m, const std::string& path) {
  int64_t opset = -1;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  }
  if (opset < 0) {
    return error(StatusCode::kUnsupported) << path << ": no opset_import for the default ONNX domain (only ops of "
                                           << (m.opset_import_size() ? m.opset_import(0).domain() : "no domain") << ")";
  }
  if (opset < 1 || opset > 21) {
    return error(StatusCode::kUnsupported) << path << ": opset " << opset << " (fusert imports opsets 1..21)";
  }
  return opset;
}

// A graph input's shape: its dims, symbolic ones bound from `bindings` or (leading) 1.
Result<Shape> input_shape(const onnx::ValueInfoProto& in, const std::map<std::string, Shape>& bindings,
                          const std::string& path) {
  const auto& tt = in.type().tensor_type();
  auto it = bindings.find(in.name());
  const int rank = tt.shape().dim_size();
  if (it != bindings.end()) {
    if (tt.has_shape() && static_cast<int>(it->second.size()) != rank) {
      return error(StatusCode::kInvalidArgument) << path << ": --shape " << in.name() << " has rank "
                                                 << it->second.size() << ", the model's input has rank " << rank;
    }
    for (int d = 0; d < rank && tt.has_shape(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0 && dim.dim_value() != it->second[static_cast<size_t>(d)]) {
        return error(StatusCode::kInvalidArgument)
               << path << ": --shape " << in.name() << " " << shape_str(it->second) << ": dimension " << d
               << " is fixed at " << dim.dim_value() << " in the model";
      }
    }
    return it->second;
  }
  if (!tt.has_shape()) {
    return error(StatusCode::kInvalidArgument)
           << path << ": input '" << in.name() << "' has no shape; give it with --shape " << in.name()
           << "=1x3x224x224";
  }
  Shape s;
  for (int d = 0; d < rank; ++d) {
    const auto& dim = tt.shape().dim(d);
    if (dim.has_dim_value() && dim.dim_value() > 0) {  // exporters write -1 or 0 for "any" too
      s.push_back(dim.dim_value());
    } else if (d == 0) {
      s.push_back(1);  // a batch dim
    } else {
      return error(StatusCode::kInvalidArgument)
             << path << ": input '" << in.name() << "' dimension " << d << " is symbolic ('"
             << (dim.dim_param().empty() ? "unnamed" : dim.dim_param()) << "'); bind it with --shape " << in.name()
             << "=DxDx... (SessionOptions::input_shapes)";
    }
  }
  return s;
}

}  // namespace fusert::onnx_import

namespace fusert {

Result<Tensor> read_onnx_tensor(const std::string& path) {
  FUSERT_RETURN_IF_ERROR(check_regular_file(path, "ONNX tensor"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open";
  onnx::TensorProto t;
  if (!t.ParseFromIstream(&f)) return error(StatusCode::kParseError) << path << ": not a serialized ONNX TensorProto";
  const std::string dir = std::filesystem::path(path).parent_path().string();
  return onnx_import::decode_tensor(t, dir.empty() ? "." : dir, path);
}

}  // namespace fusert
