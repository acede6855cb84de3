// Shape functions of GridSample (ONNX opset 16 and 20 semantics, 2-D images) and LRN.
#include "graph/shape_inference.h"

namespace fusert {

Status shape_GridSample(ShapeContext &c) {
  const Shape &x = c.in(0), &grid = c.in(1);
  if (x.size() != 4) return c.unsupported() << "input " << shape_str(x) << " (fusert samples 2-D images [N, C, H, W])";
  if (c.in_dtype(0) != DType::kF32 || c.in_dtype(1) != DType::kF32) return c.unsupported() << "X and grid must be f32";
  if (grid.size() != 4 || grid[0] != x[0] || grid[3] != 2)
    return c.fail() << "grid " << shape_str(grid) << " must be [N, OH, OW, 2] with N = " << x[0];
  const std::string &mode = c.node.attr_s("mode"), &pad = c.node.attr_s("padding_mode");
  if (mode != "bilinear" && mode != "linear" && mode != "nearest" && mode != "bicubic" && mode != "cubic")
    return c.fail() << "mode '" << mode << "' (bilinear / linear, nearest, bicubic / cubic)";
  if (pad != "zeros" && pad != "border" && pad != "reflection")
    return c.fail() << "padding_mode '" << pad << "' (zeros, border, reflection)";
  c.set_out(0, {x[0], x[1], grid[1], grid[2]});
  return Status();
}

Status shape_LRN(ShapeContext &c) {
  const Shape &x = c.in(0);
  if (x.size() < 3) return c.fail() << "input " << shape_str(x) << " must be [N, C, d1, ...]";
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  const int64_t size = c.node.attr_i("size");
  if (size < 1 || size > 65536) return c.fail() << "size " << size << " outside [1, 65536]";
  c.set_out(0, x);
  return Status();
}

}  // namespace fusert
