// Tensor storage and dtype/shape helpers (the base layer: below graph/, kernels/ and runtime/).
#include "graph/base/tensor.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>

namespace fusert {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI64:
      return "i64";
    case DType::kI32:
      return "i32";
    case DType::kBool:
      return "bool";
    case DType::kI8:
      return "i8";
    case DType::kU8:
      return "u8";
  }
  return "?";
}

bool parse_dtype(const std::string& s, DType* out) {
  for (DType t :
       {DType::kF32, DType::kF16, DType::kBF16, DType::kI64, DType::kI32, DType::kBool, DType::kI8, DType::kU8}) {
    if (s == dtype_name(t)) {
      *out = t;
      return true;
    }
  }
  return false;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF16:
    case DType::kBF16:
      return 2;
    case DType::kI64:
      return 8;
    case DType::kI32:
      return 4;
    case DType::kBool:
    case DType::kI8:
    case DType::kU8:
      return 1;
  }
  return 4;
}

int64_t shape_numel(const Shape& s) {
  // Saturates instead of wrapping (signed overflow is undefined behaviour, and a wrapped count
  // would size a buffer too small): an unchecked huge shape then fails to allocate, loudly.
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

bool checked_numel(const Shape& s, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0 || (d > 0 && n > kMaxTensorElements / d)) return false;
    n *= d;
  }
  *out = n;
  return n <= kMaxTensorElements;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? ", " : "") << s[i];
  os << "]";
  return os.str();
}

static std::shared_ptr<uint8_t> alloc_buffer(size_t nbytes) {
  size_t rounded = ((nbytes + 63) / 64) * 64;
  if (rounded == 0) rounded = 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();  // Session::load / run report it as an error naming the size
  std::memset(p, 0, rounded);
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) { buf_ = alloc_buffer(nbytes()); }

Tensor Tensor::view(DType dtype, Shape shape, void* data, std::shared_ptr<void> keep) {
  int64_t n = 0;
  if (!data || reinterpret_cast<uintptr_t>(data) % 64 != 0 || !checked_numel(shape, &n)) return Tensor();
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.buf_ = std::shared_ptr<uint8_t>(std::move(keep), static_cast<uint8_t*>(data));  // aliasing: keep owns
  return t;
}

Tensor Tensor::f32(Shape shape, std::vector<float> values) {
  Tensor t(DType::kF32, std::move(shape));
  FUSERT_CHECK(static_cast<int64_t>(values.size()) == t.numel()) << "value count";
  std::memcpy(t.raw(), values.data(), values.size() * sizeof(float));
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes()) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  FUSERT_CHECK(shape_numel(shape) == numel()) << shape_str(shape) << " vs " << shape_str(shape_);
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

double relative_l2(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double d = static_cast<double>(a.f32()[i]) - b.f32()[i];
    num += d * d;
    den += static_cast<double>(b.f32()[i]) * b.f32()[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) m = std::max(m, std::fabs(static_cast<double>(a.f32()[i]) - b.f32()[i]));
  return m;
}

}  // namespace fusert
