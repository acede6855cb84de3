// Host implementations of kernels/cuda/layout.cuh for fusert_emu (in place of layout.cu): the
// same functions and argument checks, written from the header's contract. Each call checks its
// whole read and write ranges against the device allocations, then enqueues the work on the
// stream (or records it while the stream is captured), as the real kernel launches do.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/layout.cuh"
#include "tests/cuda_emu/emu.h"

namespace fusert::cuda {

namespace {

namespace emu = fusert::emu;

int64_t volume(int rank, const int64_t* shape) {
  int64_t n = 1;
  for (int d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

// Byte range [lo, hi) an index space of `shape` touches at `offset` + sum i_d * strides[d].
bool range_ok(const void* base, int rank, const int64_t* shape, int64_t offset, const int64_t* strides, int elem,
              emu::Access acc, const std::string& what) {
  int64_t lo = offset, hi = offset;
  for (int d = 0; d < rank; ++d) {
    const int64_t span = (shape[d] - 1) * strides[d];
    (span < 0 ? lo : hi) += span;
  }
  if (lo < 0) {
    emu::record_violation(what + ": index " + std::to_string(lo) + " before the start of the buffer");
    return false;
  }
  return emu::check_device_range(static_cast<const char*>(base) + lo * elem, static_cast<size_t>(hi - lo + 1) * elem,
                                 acc, what);
}

size_t cast_size(CastType t) {
  switch (t) {
    case CastType::kF32:
      return 4;
    case CastType::kI64:
      return 8;
    case CastType::kI32:
      return 4;
    case CastType::kBool:
      return 1;
  }
  return 0;
}

double load_as_double(const void* p, CastType t, int64_t i) {
  switch (t) {
    case CastType::kF32:
      return static_cast<const float*>(p)[i];
    case CastType::kI64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case CastType::kI32:
      return static_cast<const int32_t*>(p)[i];
    case CastType::kBool:
      return static_cast<const uint8_t*>(p)[i];
  }
  return 0;
}

bool is_zero(const void* p, CastType t, int64_t i) {
  switch (t) {
    case CastType::kF32:
      return static_cast<const float*>(p)[i] == 0.f;
    case CastType::kI64:
      return static_cast<const int64_t*>(p)[i] == 0;
    case CastType::kI32:
      return static_cast<const int32_t*>(p)[i] == 0;
    case CastType::kBool:
      return static_cast<const uint8_t*>(p)[i] == 0;
  }
  return true;
}

}  // namespace

cudaError_t strided_copy(int rank, const int64_t* shape, const void* x, int64_t in_offset, const int64_t* in_strides,
                         void* y, int64_t out_offset, const int64_t* out_strides, int elem_bytes, cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  if (elem_bytes != 1 && elem_bytes != 4 && elem_bytes != 8) return cudaErrorInvalidValue;
  const int64_t numel = volume(rank, shape);
  if (numel == 0) return cudaSuccess;
  // The argument struct is filled at the call, as the kernel's by-value parameters are.
  std::vector<int64_t> sh(shape, shape + rank), is(in_strides, in_strides + rank), os(out_strides, out_strides + rank);
  if (!range_ok(x, rank, shape, in_offset, in_strides, elem_bytes, emu::Access::kRead, "strided_copy source") ||
      !range_ok(y, rank, shape, out_offset, out_strides, elem_bytes, emu::Access::kWrite, "strided_copy destination")) {
    return cudaErrorIllegalAddress;
  }
  emu::emu_enqueue(stream, [=] {
    const char* src = static_cast<const char*>(x);
    char* dst = static_cast<char*>(y);
    for (int64_t i = 0; i < numel; ++i) {
      int64_t rem = i, s = in_offset, o = out_offset;
      for (int d = rank - 1; d >= 0; --d) {
        const int64_t idx = rem % sh[static_cast<size_t>(d)];
        rem /= sh[static_cast<size_t>(d)];
        s += idx * is[static_cast<size_t>(d)];
        o += idx * os[static_cast<size_t>(d)];
      }
      std::memcpy(dst + o * elem_bytes, src + s * elem_bytes, static_cast<size_t>(elem_bytes));
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t gather(int64_t outer, int64_t axis_len, int64_t inner, const void* x, int elem_bytes, const void* idx,
                   bool idx_i64, int64_t count, void* y, int* bad_index, cudaStream_t stream) {
  if (outer * count * inner == 0) return cudaSuccess;
  if (elem_bytes != 4 && elem_bytes != 8) return cudaErrorInvalidValue;
  const size_t eb = static_cast<size_t>(elem_bytes);
  bool ok =
      emu::check_device_range(x, eb * static_cast<size_t>(outer * axis_len * inner), emu::Access::kRead, "gather x");
  ok &= emu::check_device_range(idx, (idx_i64 ? 8 : 4) * static_cast<size_t>(count), emu::Access::kRead,
                                "gather indices");
  ok &= emu::check_device_range(y, eb * static_cast<size_t>(outer * count * inner), emu::Access::kWrite, "gather y");
  if (bad_index) ok &= emu::check_device_range(bad_index, sizeof(int), emu::Access::kWrite, "gather bad-index flag");
  if (!ok) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    const char* src = static_cast<const char*>(x);
    char* dst = static_cast<char*>(y);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < count; ++j) {
        int64_t k = idx_i64 ? static_cast<const int64_t*>(idx)[j] : static_cast<const int32_t*>(idx)[j];
        if (k < 0) k += axis_len;
        char* row = dst + ((o * count + j) * inner) * elem_bytes;
        if (k < 0 || k >= axis_len) {
          if (bad_index) *bad_index = 1;
          std::memset(row, 0, eb * static_cast<size_t>(inner));
        } else {
          std::memcpy(row, src + ((o * axis_len + k) * inner) * elem_bytes, eb * static_cast<size_t>(inner));
        }
      }
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t cast(int64_t count, const void* x, CastType from, void* y, CastType to, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  const size_t fs = cast_size(from), ts = cast_size(to);
  if (!fs || !ts) return cudaErrorInvalidValue;
  bool ok = emu::check_device_range(x, fs * static_cast<size_t>(count), emu::Access::kRead, "cast x");
  ok &= emu::check_device_range(y, ts * static_cast<size_t>(count), emu::Access::kWrite, "cast y");
  if (!ok) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t i = 0; i < count; ++i) {
      if (to == CastType::kBool) {
        static_cast<uint8_t*>(y)[i] = is_zero(x, from, i) ? 0 : 1;
        continue;
      }
      const double v = load_as_double(x, from, i);  // through double, as the CPU oracle converts
      switch (to) {
        case CastType::kF32:
          static_cast<float*>(y)[i] = static_cast<float>(v);
          break;
        case CastType::kI64:
          static_cast<int64_t*>(y)[i] = static_cast<int64_t>(v);
          break;
        case CastType::kI32:
          static_cast<int32_t*>(y)[i] = static_cast<int32_t>(v);
          break;
        case CastType::kBool:
          break;
      }
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t where(int rank, const int64_t* out_shape, const uint8_t* cond, const int64_t* c_strides, const float* a,
                  const int64_t* a_strides, const float* b, const int64_t* b_strides, float* y, cudaStream_t stream) {
  if (rank < 0 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  const int64_t numel = volume(rank, out_shape);
  if (numel == 0) return cudaSuccess;
  std::vector<int64_t> sh(out_shape, out_shape + rank), cs(c_strides, c_strides + rank),
      as(a_strides, a_strides + rank), bs(b_strides, b_strides + rank);
  std::vector<int64_t> contiguous(static_cast<size_t>(rank));
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    contiguous[static_cast<size_t>(d)] = stride;
    stride *= out_shape[d];
  }
  bool ok = range_ok(cond, rank, out_shape, 0, c_strides, 1, emu::Access::kRead, "where cond");
  ok &= range_ok(a, rank, out_shape, 0, a_strides, 4, emu::Access::kRead, "where a");
  ok &= range_ok(b, rank, out_shape, 0, b_strides, 4, emu::Access::kRead, "where b");
  ok &= range_ok(y, rank, out_shape, 0, contiguous.data(), 4, emu::Access::kWrite, "where y");
  if (!ok) return cudaErrorIllegalAddress;
  emu::emu_enqueue(stream, [=] {
    for (int64_t i = 0; i < numel; ++i) {
      int64_t rem = i, ci = 0, ai = 0, bi = 0;
      for (int d = rank - 1; d >= 0; --d) {
        const size_t u = static_cast<size_t>(d);
        const int64_t idx = rem % sh[u];
        rem /= sh[u];
        ci += idx * cs[u];
        ai += idx * as[u];
        bi += idx * bs[u];
      }
      y[i] = cond[ci] ? a[ai] : b[bi];
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t pad_map(int rank, const int64_t* out_shape, const int64_t* in_shape, const int64_t* begin, PadMode mode,
                    const void* value, const void* x, void* y, int elem_bytes, cudaStream_t stream) {
  if (rank < 1 || rank > kMaxCopyRank) return cudaErrorInvalidValue;
  if (elem_bytes != 1 && elem_bytes != 4 && elem_bytes != 8) return cudaErrorInvalidValue;
  for (int d = 0; d < rank; ++d)
    if (in_shape[d] <= 0 && out_shape[d] > 0 && mode != PadMode::kConstant) return cudaErrorInvalidValue;
  const int64_t numel = volume(rank, out_shape), in_numel = volume(rank, in_shape);
  if (numel == 0) return cudaSuccess;
  const size_t eb = static_cast<size_t>(elem_bytes);
  bool ok = emu::check_device_range(y, eb * static_cast<size_t>(numel), emu::Access::kWrite, "pad_map y");
  if (in_numel > 0)
    ok &= emu::check_device_range(x, eb * static_cast<size_t>(in_numel), emu::Access::kRead, "pad_map x");
  if (mode == PadMode::kConstant) ok &= emu::check_device_range(value, eb, emu::Access::kRead, "pad_map value");
  if (!ok) return cudaErrorIllegalAddress;
  const std::vector<int64_t> os(out_shape, out_shape + rank), is(in_shape, in_shape + rank), bs(begin, begin + rank);
  emu::emu_enqueue(stream, [=] {
    for (int64_t i = 0; i < numel; ++i) {
      int64_t rem = i, src = 0, stride = 1;
      bool outside = false;
      for (int d = rank - 1; d >= 0; --d) {
        const size_t k = static_cast<size_t>(d);
        const int64_t len = is[k];
        int64_t j = rem % os[k] - bs[k];
        rem /= os[k];
        if (j < 0 || j >= len) {
          if (mode == PadMode::kConstant) {
            outside = true;
          } else if (mode == PadMode::kReflect) {
            j = j < 0 ? -j : 2 * (len - 1) - j;
          } else if (mode == PadMode::kEdge) {
            j = j < 0 ? 0 : len - 1;
          } else {
            j = ((j % len) + len) % len;
          }
          if (!outside && (j < 0 || j >= len)) return emu::record_violation("pad_map: a source index outside x");
        }
        src += j * stride;
        stride *= len;
      }
      std::memcpy(static_cast<char*>(y) + i * elem_bytes,
                  outside ? value : static_cast<const char*>(x) + src * elem_bytes, eb);
    }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t resize_2d(int64_t outer, int64_t ih, int64_t iw, int64_t oh, int64_t ow, const ResizeTables& t,
                      const float* x, float* y, cudaStream_t stream) {
  if (t.row_taps < 1 || t.col_taps < 1) return cudaErrorInvalidValue;
  if (outer * oh * ow == 0) return cudaSuccess;
  const size_t rows = static_cast<size_t>(oh * t.row_taps), cols = static_cast<size_t>(ow * t.col_taps);
  bool ok = emu::check_device_range(x, 4 * static_cast<size_t>(outer * ih * iw), emu::Access::kRead, "resize_2d x");
  ok &= emu::check_device_range(y, 4 * static_cast<size_t>(outer * oh * ow), emu::Access::kWrite, "resize_2d y");
  ok &= emu::check_device_range(t.row_index, 8 * rows, emu::Access::kRead, "resize_2d row indices");
  ok &= emu::check_device_range(t.row_weight, 4 * rows, emu::Access::kRead, "resize_2d row weights");
  ok &= emu::check_device_range(t.col_index, 8 * cols, emu::Access::kRead, "resize_2d column indices");
  ok &= emu::check_device_range(t.col_weight, 4 * cols, emu::Access::kRead, "resize_2d column weights");
  if (!ok) return cudaErrorIllegalAddress;
  const ResizeTables tt = t;
  emu::emu_enqueue(stream, [=] {
    for (size_t i = 0; i < rows; ++i)  // every source index inside x (the kernel reads through them)
      if (tt.row_index[i] < 0 || tt.row_index[i] >= ih)
        return emu::record_violation("resize_2d: a row index outside x");
    for (size_t i = 0; i < cols; ++i)
      if (tt.col_index[i] < 0 || tt.col_index[i] >= iw)
        return emu::record_violation("resize_2d: a column index outside x");
    for (int64_t p = 0; p < outer; ++p)
      for (int64_t r = 0; r < oh; ++r)
        for (int64_t o = 0; o < ow; ++o) {
          float acc = 0.0f;
          for (int tr = 0; tr < tt.row_taps; ++tr) {
            const float* src = x + p * ih * iw + tt.row_index[r * tt.row_taps + tr] * iw;
            const int64_t c0 = o * tt.col_taps;
            float v = tt.col_taps == 1 ? src[tt.col_index[c0]] : tt.col_weight[c0] * src[tt.col_index[c0]];
            for (int k = 1; k < tt.col_taps; ++k) v += tt.col_weight[c0 + k] * src[tt.col_index[c0 + k]];
            const float w = tt.row_weight[r * tt.row_taps + tr];
            acc = tr == 0 ? (tt.row_taps == 1 ? v : w * v) : acc + w * v;
          }
          y[(p * oh + r) * ow + o] = acc;
        }
    emu::count_op(emu::OpKind::kCopy);
  });
  return cudaSuccess;
}

}  // namespace fusert::cuda
