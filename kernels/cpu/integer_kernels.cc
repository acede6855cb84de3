// Integer arithmetic and Mod (kernels/cpu/integer_kernels.h).
#include "kernels/cpu/integer_kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/broadcast_iter.h"

namespace fusert::cpu {

namespace {

template <typename T>
T wrap(std::make_unsigned_t<T> v) {
  return static_cast<T>(v);  // two's complement since C++20, and on every compiler we build with
}

template <typename T>
T apply(IntOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const bool min_by_minus_one = a == std::numeric_limits<T>::min() && b == -1;
  switch (op) {
    case IntOp::kAdd:
      return wrap<T>(static_cast<U>(a) + static_cast<U>(b));
    case IntOp::kSub:
      return wrap<T>(static_cast<U>(a) - static_cast<U>(b));
    case IntOp::kMul:
      return wrap<T>(static_cast<U>(a) * static_cast<U>(b));
    case IntOp::kNeg:
      return wrap<T>(U{0} - static_cast<U>(a));
    case IntOp::kDiv:
      return min_by_minus_one ? a : a / b;
    case IntOp::kFmod:
      return min_by_minus_one ? 0 : a % b;
    case IntOp::kMod: {
      if (min_by_minus_one) return 0;
      const T r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
    }
    case IntOp::kPow: {
      U result = 1, base = static_cast<U>(a);
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return wrap<T>(result);
    }
  }
  return 0;
}

template <typename T>
void run(IntOp op, const Shape& ys, const Shape& as, const T* a, const Shape& bs, const T* b, T* y) {
  for_each_broadcast(ys, {as, bs},
                     [&](int64_t k, const std::vector<int64_t>& o) { y[k] = apply(op, a[o[0]], b[o[1]]); });
}

}  // namespace

void integer_op(IntOp op, ElemType t, const Shape& ys, const Shape& as, const void* a, const Shape& bs, const void* b,
                void* y) {
  if (t == ElemType::kI32) {
    run(op, ys, as, static_cast<const int32_t*>(a), bs, static_cast<const int32_t*>(b), static_cast<int32_t*>(y));
  } else {
    run(op, ys, as, static_cast<const int64_t*>(a), bs, static_cast<const int64_t*>(b), static_cast<int64_t*>(y));
  }
}

void fmod_f32(const Shape& ys, const Shape& as, const float* a, const Shape& bs, const float* b, float* y) {
  for_each_broadcast(ys, {as, bs},
                     [&](int64_t k, const std::vector<int64_t>& o) { y[k] = std::fmod(a[o[0]], b[o[1]]); });
}

}  // namespace fusert::cpu
