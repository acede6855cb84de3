// Shape functions of GridSample (ONNX opset 16 and 20 semantics, 2-D images), LRN, ReverseSequence
// Det and RoiAlign.
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

Status shape_ReverseSequence(ShapeContext &c) {
  const Shape &x = c.in(0);
  const int64_t t = c.node.attr_i("time_axis"), b = c.node.attr_i("batch_axis");
  if (x.size() < 2) return c.fail() << "input " << shape_str(x) << " must have rank >= 2";
  if (!((t == 0 && b == 1) || (t == 1 && b == 0)))
    return c.fail() << "time_axis " << t << " and batch_axis " << b << " (ONNX: 0 and 1, in either order)";
  if (c.in_dtype(1) != DType::kI64) return c.fail() << "sequence_lens must be i64";
  if (c.in(1) != Shape{x[static_cast<size_t>(b)]})
    return c.fail() << "sequence_lens " << shape_str(c.in(1)) << ", expected [" << x[static_cast<size_t>(b)] << "]";
  if (c.in_dtype(0) == DType::kF16 || c.in_dtype(0) == DType::kBF16)
    return c.unsupported() << "input is " << dtype_name(c.in_dtype(0));
  c.set_out(0, x, c.in_dtype(0));
  return Status();
}

Status shape_Det(ShapeContext &c) {
  const Shape &x = c.in(0);
  if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
    return c.fail() << "input " << shape_str(x) << " is not [.., n, n]";
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "input is " << dtype_name(c.in_dtype(0)) << " (f32)";
  c.set_out(0, Shape(x.begin(), x.end() - 2));
  return Status();
}

Status shape_RoiAlign(ShapeContext &c) {
  const Shape &x = c.in(0), &rois = c.in(1), &idx = c.in(2);
  if (x.size() != 4) return c.fail() << "input " << shape_str(x) << " is not [N, C, H, W]";
  if (c.in_dtype(0) != DType::kF32 || c.in_dtype(1) != DType::kF32) return c.unsupported() << "X and rois must be f32";
  if (rois.size() != 2 || rois[1] != 4) return c.fail() << "rois " << shape_str(rois) << " is not [R, 4]";
  if (c.in_dtype(2) != DType::kI64 || idx != Shape{rois[0]})
    return c.fail() << "batch_indices must be i64 [" << rois[0] << "], got " << dtype_name(c.in_dtype(2)) << " "
                    << shape_str(idx);
  const Node &n = c.node;
  const std::string &mode = n.attr_s("mode"), &ct = n.attr_s("coordinate_transformation_mode");
  if (mode != "avg" && mode != "max") return c.fail() << "mode '" << mode << "' (avg, max)";
  if (ct != "half_pixel" && ct != "output_half_pixel")
    return c.fail() << "coordinate_transformation_mode '" << ct << "' (half_pixel, output_half_pixel)";
  const int64_t oh = n.attr_i("output_height"), ow = n.attr_i("output_width"), sr = n.attr_i("sampling_ratio");
  if (oh < 1 || ow < 1 || oh > 4096 || ow > 4096) return c.fail() << "output size " << oh << "x" << ow;
  if (sr < 0 || sr > 64) return c.fail() << "sampling_ratio " << sr << " outside [0, 64]";
  c.set_out(0, {rois[0], x[1], oh, ow});
  return Status();
}

}  // namespace fusert
