// The output shape of ONNX Reshape and Expand from their shape input's values, shared by the
// shape functions (a constant shape input) and the host ops run between execution stages where
// the values are known at run time only (DynamicReshape, DynamicExpand; runtime/staged.h).
#pragma once

#include <vector>

#include "graph/base/status.h"
#include "graph/base/tensor.h"

namespace fusert {

/// Reshape of a tensor of shape `x` to `target`: a 0 keeps x's dim at that index (unless
/// `allowzero`: then it is 0), one -1 takes the remaining elements. Errors (kInvalidArgument,
/// messages without a node's name): more than one -1, a 0 past x's rank, a negative dim, a
/// size other than x's, more than kMaxTensorElements elements.
Status reshape_to(const Shape& x, const std::vector<int64_t>& target, bool allowzero, Shape* out);

/// Expand (numpy broadcast) of `x` with `target`: the two right-aligned, a 1 in either takes the
/// other's dim. Errors (kInvalidArgument): dims that differ and neither is 1, a negative dim,
/// more than kMaxTensorElements elements.
Status expand_to(const Shape& x, const std::vector<int64_t>& target, Shape* out);

}  // namespace fusert
