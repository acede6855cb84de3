// Host tensors: a dtype, a static shape and a shared, 64-byte aligned buffer (the base layer).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/base/status.h"

namespace fusert {

/// Element types. Activations are computed in f32; f16/bf16 are accepted in weight files and
/// converted; i64/i32 carry token ids and positions.
enum class DType { kF32, kF16, kBF16, kI64, kI32, kBool };

using Shape = std::vector<int64_t>;

const char* dtype_name(DType t);  ///< "f32", "f16", "bf16", "i64", "i32", "bool"
bool parse_dtype(const std::string& s, DType* out);
size_t dtype_size(DType t);           ///< bytes per element
int64_t shape_numel(const Shape& s);  ///< product of dims (1 for a scalar)
/// Largest tensor fusert allocates: 2^31 elements (8 GiB of f32).
constexpr int64_t kMaxTensorElements = int64_t{1} << 31;
/// Product of dims into *out; false if a dim is negative or the product exceeds
/// kMaxTensorElements (or overflows).
bool checked_numel(const Shape& s, int64_t* out);
std::string shape_str(const Shape& s);  ///< "[1, 3, 224, 224]"

/// A dense row-major tensor. Copies share the buffer (cheap); use clone() for a deep copy.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, Shape shape);  ///< zero-initialised
  static Tensor f32(Shape shape, std::vector<float> values);

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return !buf_; }

  void* raw() { return buf_.get(); }
  const void* raw() const { return buf_.get(); }
  float* f32() { return static_cast<float*>(raw()); }
  const float* f32() const { return static_cast<const float*>(raw()); }
  int64_t* i64() { return static_cast<int64_t*>(raw()); }
  const int64_t* i64() const { return static_cast<const int64_t*>(raw()); }

  Tensor clone() const;
  /// Same buffer, another shape of the same element count.
  Tensor reshaped(Shape shape) const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<uint8_t> buf_;
};

/// Relative L2 error ||a - b|| / max(||b||, tiny) over f32 tensors of equal element count.
double relative_l2(const Tensor& a, const Tensor& b);
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace fusert
