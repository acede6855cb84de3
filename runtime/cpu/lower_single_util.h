// Small helpers the single-op CPU lowerings share (lower_single*.cc, lower_import.cc).
#pragma once

#include "graph/ir.h"

namespace fusert::cpu_lowering {

inline const Shape& shape_of(const Graph& g, ValueId id) { return g.value(id).shape; }
inline size_t esize_of(const Graph& g, ValueId id) { return dtype_size(g.value(id).dtype); }

/// `s` with leading 1s up to `rank`: a broadcast operand aligned with its output's dims.
inline Shape padded(const Shape& s, size_t rank) {
  Shape p = s;
  p.insert(p.begin(), rank - p.size(), 1);
  return p;
}

}  // namespace fusert::cpu_lowering
