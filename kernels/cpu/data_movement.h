// Fast data-movement kernels for ONNX Expand, Tile and Pad: row by row instead of element by
// element. The output is walked one innermost row at a time (the source row's offset computed
// once per row), and each row is one memcpy, a broadcast fill or a repeat of the source row.
// Rows are threaded. Elements are raw bytes of `esize` (1, 2, 4 or 8), so every dtype works.
// The reference loops of kernels/cpu/sequence_kernels.h (expand, tile, pad) are the tests'
// oracles; the contracts are the same.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/base/tensor.h"

namespace fusert::cpu {

/// As cpu::expand: y (shape `ys`) = x (shape `xs`, right-aligned to ys's rank) broadcast.
void expand_rows(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y);
/// ONNX Transpose of one-byte elements (i8, u8, bool): y[.., i_perm[k], ..] = x[.., i_k, ..], y of
/// x's dims permuted by `perm`.
void transpose_bytes(const Shape& xs, const std::vector<int64_t>& perm, const uint8_t* x, uint8_t* y);
/// As cpu::tile: y (shape `ys`, each dim a multiple of xs's) = x repeated along every dim.
void tile_rows(const Shape& xs, const Shape& ys, size_t esize, const void* x, void* y);
/// As cpu::pad: pads [begin..., end...] all >= 0; mode 0 constant `value`, 1 reflect, 2 edge.
void pad_rows(const Shape& xs, const std::vector<int64_t>& pads, int mode, const void* value, size_t esize,
              const void* x, void* y);

}  // namespace fusert::cpu
