// Shape functions of the losses (ONNX opset 13 semantics): NegativeLogLikelihoodLoss.
#include "graph/shape_inference.h"

namespace fusert {

// X [N, C, d1..dk] f32, targets [N, d1..dk] i64/i32, weight [C] f32; the loss per sample
// (reduction none) or a scalar.
Status shape_NegativeLogLikelihoodLoss(ShapeContext& c) {
  const Shape &x = c.in(0), &t = c.in(1);
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  if (x.size() < 2) return c.fail() << "input " << shape_str(x) << " must be [N, C, d1..dk] (rank >= 2)";
  if (c.in_dtype(1) != DType::kI64 && c.in_dtype(1) != DType::kI32)
    return c.fail() << "target must be i64 or i32, got " << dtype_name(c.in_dtype(1));
  Shape want = {x[0]};
  want.insert(want.end(), x.begin() + 2, x.end());
  if (t != want)
    return c.fail() << "target " << shape_str(t) << " does not match input " << shape_str(x) << " (expected "
                    << shape_str(want) << ")";
  if (c.has_input(2)) {
    if (c.in_dtype(2) != DType::kF32) return c.fail() << "weight must be f32, got " << dtype_name(c.in_dtype(2));
    if (c.in(2) != Shape{x[1]}) return c.fail() << "weight " << shape_str(c.in(2)) << " must be [C] = [" << x[1] << "]";
  }
  const std::string& r = c.node.attr_s("reduction");
  if (r != "none" && r != "sum" && r != "mean") return c.fail() << "reduction '" << r << "' (none, sum, mean)";
  c.set_out(0, r == "none" ? want : Shape{});
  return Status();
}

}  // namespace fusert
