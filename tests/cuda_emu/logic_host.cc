// Host implementations of kernels/cuda/logic.cuh for fusert_emu (in place of logic.cu): the same
// functions and argument checks, written from the header's contract; each call checks its read and
// write ranges against the device allocations, then enqueues the work on the stream.
#include <string>
#include <vector>

#include "kernels/cuda/layout.cuh"
#include "kernels/cuda/logic.cuh"
#include "tests/cuda_emu/emu.h"

namespace fusert::cuda {

namespace {

namespace emu = fusert::emu;

template <typename T>
bool apply(LogicOp op, T a, T b) {
  switch (op) {
    case LogicOp::kEqual:
      return a == b;
    case LogicOp::kLess:
      return a < b;
    case LogicOp::kGreater:
      return a > b;
    case LogicOp::kLessOrEqual:
      return a <= b;
    case LogicOp::kGreaterOrEqual:
      return a >= b;
    case LogicOp::kAnd:
      return a && b;
    case LogicOp::kOr:
      return a || b;
    case LogicOp::kXor:
      return (a != T(0)) != (b != T(0));
  }
  return false;
}

// The element count an operand's strides reach over `shape`, + 1 (its extent in elements).
int64_t extent(int rank, const int64_t* shape, const int64_t* strides) {
  int64_t e = 0;
  for (int d = 0; d < rank; ++d) e += (shape[d] - 1) * strides[d];
  return e + 1;
}

template <typename T>
void run(std::vector<int64_t> shape, LogicOp op, const T* a, std::vector<int64_t> as, const T* b,
         std::vector<int64_t> bs, uint8_t* y, int64_t numel) {
  const int rank = static_cast<int>(shape.size());
  for (int64_t i = 0; i < numel; ++i) {
    int64_t rem = i, ai = 0, bi = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const size_t k = static_cast<size_t>(d);
      const int64_t idx = rem % shape[k];
      rem /= shape[k];
      ai += idx * as[k];
      bi += idx * bs[k];
    }
    y[i] = apply(op, a[ai], b[bi]) ? 1 : 0;
  }
}

}  // namespace

cudaError_t compare(int rank, const int64_t* out_shape, LogicOp op, LogicType t, const void* a,
                    const int64_t* a_strides, const void* b, const int64_t* b_strides, uint8_t* y,
                    cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  int64_t numel = 1;
  for (int d = 0; d < rank; ++d) numel *= out_shape[d];
  if (numel == 0) return cudaSuccess;
  const size_t eb = t == LogicType::kF32 || t == LogicType::kI32 ? 4 : t == LogicType::kI64 ? 8 : 1;
  bool ok = emu::check_device_range(a, eb * static_cast<size_t>(extent(rank, out_shape, a_strides)), emu::Access::kRead,
                                    "compare a");
  ok &= emu::check_device_range(b, eb * static_cast<size_t>(extent(rank, out_shape, b_strides)), emu::Access::kRead,
                                "compare b");
  ok &= emu::check_device_range(y, static_cast<size_t>(numel), emu::Access::kWrite, "compare y");
  if (!ok) return cudaErrorIllegalAddress;
  const std::vector<int64_t> sh(out_shape, out_shape + rank), as(a_strides, a_strides + rank),
      bs(b_strides, b_strides + rank);
  emu::emu_enqueue(stream, [=] {
    switch (t) {
      case LogicType::kF32:
        run(sh, op, static_cast<const float*>(a), as, static_cast<const float*>(b), bs, y, numel);
        break;
      case LogicType::kI32:
        run(sh, op, static_cast<const int32_t*>(a), as, static_cast<const int32_t*>(b), bs, y, numel);
        break;
      case LogicType::kI64:
        run(sh, op, static_cast<const int64_t*>(a), as, static_cast<const int64_t*>(b), bs, y, numel);
        break;
      case LogicType::kBool:
        run(sh, op, static_cast<const uint8_t*>(a), as, static_cast<const uint8_t*>(b), bs, y, numel);
        break;
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t logical_not(int64_t count, const uint8_t* x, uint8_t* y, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  bool ok = emu::check_device_range(x, static_cast<size_t>(count), emu::Access::kRead, "logical_not x");
  ok &= emu::check_device_range(y, static_cast<size_t>(count), emu::Access::kWrite, "logical_not y");
  if (!ok) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t i = 0; i < count; ++i) y[i] = x[i] ? 0 : 1;
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

}  // namespace fusert::cuda
