// Open dims of an ONNX model: which input dims stay symbolic without a declaration, and the
// sizes the model is planned and probed at (graph/onnx/onnx_dims.h).
#include "graph/onnx/onnx_dims.h"

#include <algorithm>
#include <cctype>

#include "graph/base/tensor.h"

namespace fusert::onnx_import {

bool dim_fixed(const onnx::TensorShapeProto::Dimension& d) { return d.has_dim_value() && d.dim_value() > 0; }

std::string dim_symbol(const onnx::ValueInfoProto& in, int d) {
  const auto& shp = in.type().tensor_type().shape();
  if (d < shp.dim_size()) {  // "?" and the like (no letter or digit) name no dim: unnamed
    const std::string& p = shp.dim(d).dim_param();
    if (std::any_of(p.begin(), p.end(), [](unsigned char c) { return std::isalnum(c) != 0; })) return p;
  }
  return in.name() + "." + std::to_string(d);
}

std::vector<OpenDim> open_dims(const onnx::GraphProto& gp, const std::map<std::string, Shape>& bindings,
                               const std::vector<SymbolicDim>& declared) {
  std::set<std::string> seen, inits;
  for (const SymbolicDim& d : declared) seen.insert(d.name);
  for (const auto& t : gp.initializer()) inits.insert(t.name());
  std::vector<OpenDim> out;
  for (const auto& in : gp.input()) {
    if (inits.count(in.name()) || bindings.count(in.name()) || !in.type().tensor_type().has_shape()) continue;
    const auto& shp = in.type().tensor_type().shape();
    for (int d = 0; d < shp.dim_size(); ++d) {
      const std::string sym = dim_symbol(in, d);
      if (dim_fixed(shp.dim(d)) || !seen.insert(sym).second) continue;
      OpenDim o;
      o.dim.name = sym;
      o.dim.min = 1;
      o.dim.max = kMaxTensorElements;
      o.dim.open = true;
      o.leading = d == 0;
      o.spatial = shp.dim_size() == 4 && d >= 2;
      o.dim.opt = open_opt(o, 0);
      out.push_back(o);
    }
  }
  return out;
}

int64_t open_opt(const OpenDim& o, int k) {
  static const int64_t spatial[kOpenAttempts] = {224, 256, 320, 384, 448, 512, 640, 32, 64, 128, 1024};
  static const int64_t other[kOpenAttempts] = {128, 64, 32, 16, 8, 4, 2, 1, 256, 512, 1024};
  if (o.leading) return 1;
  return (o.spatial ? spatial : other)[k < 0 ? 0 : (k < kOpenAttempts ? k : kOpenAttempts - 1)];
}

int64_t open_probe(const OpenDim& o, int k) {
  const int64_t opt = o.dim.opt;
  if (k == 0) return 2 * opt;
  if (k == 1) return opt > 1 ? opt / 2 : 3;
  return opt + 1;
}

}  // namespace fusert::onnx_import
