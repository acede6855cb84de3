// CPU kernels of ONNX's ReverseSequence and Det: opaque ops, one pass each.
#pragma once

#include <cstddef>
#include <cstdint>

namespace fusert::cpu {

/// ONNX ReverseSequence on x [.., T, .., B, ..] seen as [outer?]: for each batch b the first
/// lens[b] steps along the time axis reversed, the rest copied. `time_stride` / `batch_stride`
/// are the axes' element strides, `inner` the elements below the faster of the two (contiguous
/// runs copied whole: the axes are 0 and 1 of a row-major tensor), `esize` bytes per element.
void reverse_sequence(int64_t steps, int64_t batch, int64_t time_stride, int64_t batch_stride, int64_t inner,
                      size_t esize, const int64_t* lens, const void* x, void* y);

/// ONNX Det: y[i] = det of the i-th [n, n] matrix of x (LU with partial pivoting in double).
void det(int64_t count, int64_t n, const float* x, float* y);

}  // namespace fusert::cpu
