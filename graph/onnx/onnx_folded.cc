// ONNX ops folded into constants at import (graph/onnx/onnx_folded.h).
#include "graph/onnx/onnx_folded.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "graph/base/range.h"
#include "graph/onnx/onnx_tensor.h"

namespace fusert::onnx_import {

Result<Tensor> constant_value(const onnx::NodeProto& np, const std::string& base_dir, const SourceLoc& loc) {
  for (const auto& a : np.attribute()) {
    if (a.name() == "value") return decode_tensor(a.t(), base_dir, loc.str());
    if (a.name() == "value_float") return Tensor::f32({}, {a.f()});
    if (a.name() == "value_floats") {
      return Tensor::f32({a.floats_size()}, std::vector<float>(a.floats().begin(), a.floats().end()));
    }
    if (a.name() == "value_int") {
      Tensor t(DType::kI64, {});
      t.i64()[0] = a.i();
      return t;
    }
    if (a.name() == "value_ints") return i64_tensor(std::vector<int64_t>(a.ints().begin(), a.ints().end()));
  }
  return error(StatusCode::kUnsupported) << loc.str() << ": Constant without a tensor, float(s) or int(s) value";
}

// Shape and Size: from the input's shape (static once the inputs are bound).
Result<std::optional<Tensor>> shape_value(const Graph& g, const onnx::NodeProto& np, const Shape& x) {
  const int64_t r = static_cast<int64_t>(x.size());
  if (np.op_type() == "Size") {
    Tensor t(DType::kI64, {});
    t.i64()[0] = shape_numel(x);
    return std::optional<Tensor>(std::move(t));
  }
  int64_t start = 0, end = r;
  if (const auto* a = find_attr(np, "start"))
    start = a->i() < 0 ? std::max<int64_t>(0, a->i() + r) : std::min(a->i(), r);
  if (const auto* a = find_attr(np, "end")) end = a->i() < 0 ? std::max<int64_t>(0, a->i() + r) : std::min(a->i(), r);
  (void)g;
  return std::optional<Tensor>(i64_tensor(std::vector<int64_t>(x.begin() + start, x.begin() + std::max(start, end))));
}

// ConstantOfShape (value attr, default f32 0) and Range (ONNX opset 11: ceil((limit - start) /
// delta) elements) on constant inputs.
Result<Tensor> generated_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                               const std::string& base_dir, const SourceLoc& loc) {
  const std::string& op = np.op_type();
  for (size_t i = 0; i < ins.size(); ++i) {
    if (ins[i] == kNoValue || !g.value(ins[i]).is_constant || g.value(ins[i]).data.empty()) {
      return error(StatusCode::kUnsupported) << loc.str() << ": " << op << " input " << i << " must be a constant";
    }
  }
  if (op == "ConstantOfShape") {
    if (ins.size() != 1) return error(StatusCode::kParseError) << loc.str() << ": ConstantOfShape takes 1 input";
    const Tensor& shp = g.value(ins[0]).data;
    if (shp.dtype() != DType::kI64 || shp.shape().size() != 1)
      return error(StatusCode::kParseError) << loc.str() << ": ConstantOfShape input must be a 1-D i64 tensor";
    Shape s(shp.i64(), shp.i64() + shp.numel());
    int64_t count = 0;
    for (int64_t d : s)
      if (d < 0) return error(StatusCode::kShapeMismatch) << loc.str() << ": negative dim " << d;
    if (!checked_numel(s, &count) || count > (int64_t{16} << 20))
      return error(StatusCode::kUnsupported) << loc.str() << ": ConstantOfShape of " << shape_str(s) << " is too large";
    Tensor value = Tensor::f32({1}, {0.0f});
    if (const auto* a = find_attr(np, "value")) {
      FUSERT_ASSIGN_OR_RETURN(value, decode_tensor(a->t(), base_dir, loc.str()));
      if (value.numel() != 1) return error(StatusCode::kParseError) << loc.str() << ": value must have one element";
    }
    Tensor t(value.dtype(), s);
    const size_t es = dtype_size(value.dtype());
    for (int64_t i = 0; i < count; ++i)
      std::memcpy(static_cast<uint8_t*>(t.raw()) + static_cast<size_t>(i) * es, value.raw(), es);
    return t;
  }
  if (ins.size() != 3) return error(StatusCode::kParseError) << loc.str() << ": Range takes 3 inputs";
  return range_tensor(g.value(ins[0]).data, g.value(ins[1]).data, g.value(ins[2]).data, loc.str());
}

Result<Tensor> eye_like_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                              const SourceLoc& loc) {
  if (ins.size() != 1) return error(StatusCode::kParseError) << loc.str() << ": EyeLike takes 1 input";
  const Shape& s = g.value(ins[0]).shape;
  if (s.size() != 2)
    return error(StatusCode::kShapeMismatch) << loc.str() << ": EyeLike input " << shape_str(s) << " is not 2-D";
  DType t = g.value(ins[0]).dtype;
  if (const auto* a = find_attr(np, "dtype")) {
    const int64_t code = a->i();  // float16, bfloat16, float64 read as f32 elsewhere: not as a target
    if (!dtype_of(static_cast<int>(code), &t) || code == onnx::TensorProto::FLOAT16 ||
        code == onnx::TensorProto::BFLOAT16 || code == onnx::TensorProto::DOUBLE)
      return error(StatusCode::kUnsupported)
             << loc.str() << ": EyeLike dtype " << a->i() << " (fusert's tensors are float, int64, int32 or bool)";
  }
  if (t != DType::kF32 && t != DType::kI64 && t != DType::kI32 && t != DType::kBool)
    return error(StatusCode::kUnsupported) << loc.str() << ": EyeLike of " << dtype_name(t);
  const auto* k_attr = find_attr(np, "k");
  const int64_t k = k_attr ? k_attr->i() : 0;
  Tensor y(t, s);  // zeros
  for (int64_t r = 0; r < s[0]; ++r) {
    if (k > s[1] || r > s[1] - 1 - k) break;  // column r + k past the end (no overflow)
    const int64_t c = r + k;
    if (c < 0) continue;
    const int64_t i = r * s[1] + c;
    if (t == DType::kF32) y.f32()[i] = 1.f;
    if (t == DType::kI64) y.i64()[i] = 1;
    if (t == DType::kI32) static_cast<int32_t*>(y.raw())[i] = 1;
    if (t == DType::kBool) static_cast<uint8_t*>(y.raw())[i] = 1;
  }
  return y;
}

Result<Tensor> window_value(const Graph& g, const onnx::NodeProto& np, const std::vector<ValueId>& ins,
                            const SourceLoc& loc) {
  const std::string& op = np.op_type();
  if (ins.size() != 1 || ins[0] == kNoValue || !g.value(ins[0]).is_constant || g.value(ins[0]).data.numel() != 1) {
    return error(StatusCode::kUnsupported)
           << loc.str() << ": " << op << " input 0 (size) must be a constant (fusert's shapes are static)";
  }
  const Tensor& st = g.value(ins[0]).data;
  if (st.dtype() != DType::kI64 && st.dtype() != DType::kI32)
    return error(StatusCode::kParseError) << loc.str() << ": " << op << " size must be i64 or i32";
  const int64_t size = st.dtype() == DType::kI64 ? st.i64()[0] : static_cast<const int32_t*>(st.raw())[0];
  if (size < 1 || size > (int64_t{16} << 20))
    return error(StatusCode::kShapeMismatch) << loc.str() << ": " << op << " size " << size << " outside [1, 2^24]";
  const auto* dt = find_attr(np, "output_datatype");
  if (dt && dt->i() != onnx::TensorProto::FLOAT)
    return error(StatusCode::kUnsupported) << loc.str() << ": " << op << " output_datatype " << dt->i() << " (float)";
  const auto* per = find_attr(np, "periodic");
  const bool periodic = !per || per->i() != 0;
  // w[n] = a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or size - 1.
  const double a0 = op == "HannWindow" ? 0.5 : op == "HammingWindow" ? 25.0 / 46.0 : 0.42;
  const double a1 = op == "HannWindow" ? 0.5 : op == "HammingWindow" ? 21.0 / 46.0 : 0.5;
  const double a2 = op == "BlackmanWindow" ? 0.08 : 0.0;
  const double n_div = static_cast<double>(periodic ? size : size - 1);
  Tensor y(DType::kF32, {size});
  const double pi = 3.14159265358979323846;
  for (int64_t n = 0; n < size; ++n) {
    const double t = 2.0 * pi * static_cast<double>(n) / n_div;  // size 1, symmetric: 0 / 0, NaN as ORT gives
    y.f32()[n] = static_cast<float>(a0 - a1 * std::cos(t) + a2 * std::cos(2.0 * t));
  }
  return y;
}

}  // namespace fusert::onnx_import
