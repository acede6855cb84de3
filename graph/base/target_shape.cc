// Reshape's and Expand's output shapes from their shape input (graph/base/target_shape.h).
#include "graph/base/target_shape.h"

#include <algorithm>

namespace fusert {

namespace {

Status too_large(const Shape& s) {
  return error(StatusCode::kInvalidArgument) << "shape " << shape_str(s) << " exceeds the largest tensor fusert "
                                             << "allocates (" << kMaxTensorElements << " elements)";
}

}  // namespace

Status reshape_to(const Shape& x, const std::vector<int64_t>& target, bool allowzero, Shape* out) {
  Shape y(target.size());
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowzero) {
      if (i >= x.size())
        return error(StatusCode::kInvalidArgument) << "shape[" << i << "] = 0 but the input has rank " << x.size();
      d = x[i];
    }
    if (d == -1) {
      if (infer_at >= 0)
        return error(StatusCode::kInvalidArgument) << "more than one -1 in shape " << shape_str(target);
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (d < 0)
      return error(StatusCode::kInvalidArgument) << "invalid dimension " << d << " in shape " << shape_str(target);
    if (d > 0 && known > kMaxTensorElements / d) return too_large(target);  // known * d stays below 2^62
    y[i] = d;
    known *= d;
  }
  const int64_t n = shape_numel(x);
  if (infer_at >= 0) {
    if (known == 0 || n % known != 0)
      return error(StatusCode::kInvalidArgument) << "cannot reshape " << shape_str(x) << " to " << shape_str(target);
    y[static_cast<size_t>(infer_at)] = n / known;
  } else if (known != n) {
    return error(StatusCode::kInvalidArgument)
           << "cannot reshape " << shape_str(x) << " (" << n << " elements) to " << shape_str(y);
  }
  *out = std::move(y);
  return Status();
}

Status expand_to(const Shape& x, const std::vector<int64_t>& target, Shape* out) {
  const size_t r = std::max(x.size(), target.size());
  Shape y(r);
  int64_t n = 1;
  for (size_t i = 0; i < r; ++i) {  // from the last dim
    const int64_t a = i < x.size() ? x[x.size() - 1 - i] : 1;
    const int64_t b = i < target.size() ? target[target.size() - 1 - i] : 1;
    if (b < 0)
      return error(StatusCode::kInvalidArgument) << "invalid dimension " << b << " in shape " << shape_str(target);
    if (a != b && a != 1 && b != 1)
      return error(StatusCode::kInvalidArgument) << shape_str(x) << " does not broadcast to " << shape_str(target);
    const int64_t d = a == 1 ? b : a;
    if (d > 0 && n > kMaxTensorElements / d) return too_large(target);
    y[r - 1 - i] = d;
    n *= d;
  }
  *out = std::move(y);
  return Status();
}

}  // namespace fusert
