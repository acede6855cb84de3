// Host tensors: a dtype, a shape and a shared, 64-byte aligned buffer (public; the base layer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fusert/status.h"

namespace fusert {

/// Element types. Activations are computed in f32; f16/bf16 are accepted in weight files and
/// converted; i64/i32 carry token ids and positions; i8/u8 quantised values (scale and zero
/// point are tensors of their own, as in ONNX).
enum class DType {
  kF32,   ///< float32: every activation, and the inputs of image models
  kF16,   ///< float16 (weights files only)
  kBF16,  ///< bfloat16 (weights files only)
  kI64,   ///< int64: token ids, attention masks, positions
  kI32,   ///< int32
  kBool,  ///< one byte per element
  kI8,    ///< int8: quantised tensors (ONNX QuantizeLinear / DequantizeLinear, QDQ models)
  kU8     ///< uint8: quantised tensors, DynamicQuantizeLinear's output
};

/// Dimensions, outermost first: NCHW [N, C, H, W] for images, [batch, seq] for token ids.
using Shape = std::vector<int64_t>;

FUSERT_API const char* dtype_name(DType t);  ///< "f32", "f16", "bf16", "i64", "i32", "bool", "i8", "u8"
/// The DType named `s` ("f32", ...) into *out; false for an unknown name.
FUSERT_API bool parse_dtype(const std::string& s, DType* out);
FUSERT_API size_t dtype_size(DType t);           ///< bytes per element
FUSERT_API int64_t shape_numel(const Shape& s);  ///< product of dims (1 for a scalar)
/// Largest tensor fusert allocates: 2^31 elements (8 GiB of f32).
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
/// Product of dims into *out; false if a dim is negative or the product exceeds
/// kMaxTensorElements (or overflows).
FUSERT_API bool checked_numel(const Shape& s, int64_t* out);
FUSERT_API std::string shape_str(const Shape& s);  ///< "[1, 3, 224, 224]"

/// A dense row-major (C order) host tensor. Copies share the buffer (cheap); use clone() for a
/// deep copy. The buffer is 64-byte aligned. Sharing one tensor between threads is safe as long
/// as no thread writes its elements.
class FUSERT_API Tensor {
 public:
  /// An empty tensor (no buffer).
  Tensor() = default;
  /// A zero-initialised tensor. Aborts if the shape has a negative dim or more than
  /// kMaxTensorElements elements (check with checked_numel() first for untrusted shapes).
  Tensor(DType dtype, Shape shape);
  /// A float32 tensor holding `values` (values.size() must equal the shape's element count).
  static Tensor f32(Shape shape, std::vector<float> values);
  /// A tensor over memory it does not own (no copy): `data` holds the shape's elements in C
  /// order, 64-byte aligned, and stays valid and unchanged while the tensor or a copy of it is
  /// used; `keep` (may be null) shares the data's ownership. An empty tensor where `data` is null
  /// or misaligned, or the shape has a negative dim or more than kMaxTensorElements elements.
  static Tensor view(DType dtype, Shape shape, void* data, std::shared_ptr<void> keep = nullptr);

  /// The element type.
  DType dtype() const { return dtype_; }
  /// The dimensions.
  const Shape& shape() const { return shape_; }
  /// Elements: the product of the dims.
  int64_t numel() const { return shape_numel(shape_); }
  /// Bytes of the elements.
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  /// True for a default-constructed tensor.
  bool empty() const { return !buf_; }

  /// The elements, untyped.
  void* raw() { return buf_.get(); }
  /// The elements, untyped.
  const void* raw() const { return buf_.get(); }
  /// The elements of a kF32 tensor.
  float* f32() { return static_cast<float*>(raw()); }
  /// The elements of a kF32 tensor.
  const float* f32() const { return static_cast<const float*>(raw()); }
  /// The elements of a kI64 tensor.
  int64_t* i64() { return static_cast<int64_t*>(raw()); }
  /// The elements of a kI64 tensor.
  const int64_t* i64() const { return static_cast<const int64_t*>(raw()); }

  /// A deep copy (its own buffer).
  Tensor clone() const;
  /// Same buffer, another shape of the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<uint8_t> buf_;
};

/// Relative L2 error ||a - b|| / max(||b||, tiny) over f32 tensors of equal element count.
FUSERT_API double relative_l2(const Tensor& a, const Tensor& b);
/// Largest |a[i] - b[i]| over f32 tensors of equal element count.
FUSERT_API double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace fusert
