// CUDA lowering of the data-movement ops, on the device instead of host fallback: Slice (the
// source's strides scaled by the steps, a negative step too, the offset at the starts), Split (one
// copy per output at its offset along the axis) and Expand (stride 0 where the source broadcasts)
// as strided copies (kernels/cuda/layout.cuh strided_copy); Pad in every mode and Tile as one
// gather each (pad_map: the constant read from a device scalar, reflect, edge; Tile wraps); and
// Resize of the last two dims, which samples rather than copies: one launch of cuda::resize_2d over
// the sampling tables the CPU's Resize reads (runtime/lowering/resize.h), uploaded once.
#include <algorithm>
#include <array>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/common/params.h"
#include "kernels/cuda/layout.cuh"
#include "runtime/cuda/cuda_lower_internal.h"
#include "runtime/lowering/resize.h"

namespace fusert::cuda {

namespace {

std::vector<int64_t> const_i64s(const Graph& g, ValueId v) {
  const Tensor& t = g.value(v).data;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i)
    out.push_back(t.dtype() == DType::kI32 ? static_cast<const int32_t*>(t.raw())[i] : t.i64()[i]);
  return out;
}

bool copyable(const Shape& s, size_t esize) {
  return s.size() <= static_cast<size_t>(kMaxCopyRank) && (esize == 1 || esize == 4 || esize == 8);
}

// One strided copy per entry: x (from `offset`, with `strides`) into y over `shape`, y contiguous
// over `shape` unless `out_strides` is given (then from `out_offset`).
struct Copy {
  ValueId y;
  Shape shape;
  int64_t offset;
  std::vector<int64_t> strides;
  int64_t out_offset = 0;
  std::vector<int64_t> out_strides = {};
};

Status run_copies(GroupLowering& gl, ValueId x, std::vector<Copy> copies, size_t esize) {
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = static_cast<int>(copies.size());
  gl.ds.run = [=](const RunEnv& env) -> Status {
    for (const Copy& c : copies) {
      if (shape_numel(c.shape) == 0) continue;
      const std::vector<int64_t> out_strides = c.out_strides.empty() ? contiguous_strides(c.shape) : c.out_strides;
      FUSERT_RETURN_IF_ERROR(cuda_status(
          strided_copy(static_cast<int>(c.shape.size()), c.shape.data(), env.dev.raw(x), c.offset, c.strides.data(),
                       env.dev.raw(c.y), c.out_offset, out_strides.data(), static_cast<int>(esize), env.ctx.stream()),
          "strided_copy", what));
    }
    return Status();
  };
  return Status();
}

}  // namespace

Status lower_slice_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.inputs[0]).dtype);
  if (!copyable(x, esize)) return error(StatusCode::kUnsupported) << "Slice rank/dtype";
  const std::vector<int64_t> starts = const_i64s(g, n.inputs[1]);
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (n.inputs.size() > 3 && n.inputs[3] != kNoValue) axes = const_i64s(g, n.inputs[3]);
  for (size_t i = axes.size(); i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (n.inputs.size() > 4 && n.inputs[4] != kNoValue) steps = const_i64s(g, n.inputs[4]);
  std::vector<int64_t> strides = contiguous_strides(x);
  const std::vector<int64_t> xs = strides;
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {  // each start clamped as shape inference does (the CPU's Slice)
    const size_t a = static_cast<size_t>(axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i]);
    const int64_t d = x[a], st = steps[i], v = starts[i] < 0 ? starts[i] + d : starts[i];
    const int64_t begin = st > 0 ? std::min(std::max<int64_t>(v, 0), d) : std::min(std::max<int64_t>(v, 0), d - 1);
    if (y[a] > 0) offset += begin * xs[a];
    strides[a] = xs[a] * st;
  }
  return run_copies(gl, n.inputs[0], {{n.outputs[0], y, offset, strides}}, esize);
}

Status lower_split_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.inputs[0]).dtype);
  if (!copyable(x, esize)) return error(StatusCode::kUnsupported) << "Split rank/dtype";
  int64_t axis = n.attr_i("axis");
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const std::vector<int64_t> xs = contiguous_strides(x);
  std::vector<Copy> copies;
  int64_t at = 0;
  for (ValueId o : n.outputs) {
    const Shape& s = g.value(o).shape;
    copies.push_back({o, s, at * xs[static_cast<size_t>(axis)], xs});
    at += s[static_cast<size_t>(axis)];
  }
  return run_copies(gl, n.inputs[0], copies, esize);
}

Status lower_expand_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.inputs[0]).dtype);
  if (!copyable(y, esize) || x.size() > y.size()) return error(StatusCode::kUnsupported) << "Expand rank/dtype";
  const std::vector<int64_t> xs = contiguous_strides(x);
  std::vector<int64_t> strides(y.size(), 0);  // x's dims align right; a dim of 1 broadcasts (stride 0)
  const size_t lead = y.size() - x.size();
  for (size_t d = 0; d < x.size(); ++d) strides[lead + d] = x[d] == 1 ? 0 : xs[d];
  return run_copies(gl, n.inputs[0], {{n.outputs[0], y, 0, strides}}, esize);
}

Status lower_pad_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.inputs[0]).dtype);
  const std::string& m = n.attr_s("mode");
  if (!copyable(y, esize) || y.empty() || (m != "constant" && m != "reflect" && m != "edge"))
    return error(StatusCode::kUnsupported)
           << "Pad of rank 0 or above " << kMaxCopyRank << ", its dtype, or mode '" << m << "'";
  const PadMode mode = m == "constant" ? PadMode::kConstant : m == "reflect" ? PadMode::kReflect : PadMode::kEdge;
  const std::vector<int64_t> pads = n.attr_ints("pads");  // canonicalised by shape inference: begins, ends
  const std::vector<int64_t> begin(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(x.size()));
  const std::array<uint8_t, 8> value = lowering::pad_constant(g, n);
  const ConstPtr scalar = make_const_bytes(value.data(), value.size());
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const std::string what = gl.grp.name;
  const int rank = static_cast<int>(x.size()), eb = static_cast<int>(esize);
  gl.ds.copy_launches = 1;
  gl.ds.prepare = [=](Context&) { return scalar->upload(what); };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    return cuda_status(pad_map(rank, y.data(), x.data(), begin.data(), mode, scalar->raw(), env.dev.raw(xi),
                               env.dev.raw(yi), eb, env.ctx.stream()),
                       "pad_map", what);
  };
  return Status();
}

Status lower_resize_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const size_t r = x.size();
  if (g.value(n.inputs[0]).dtype != DType::kF32 || r < 2)
    return error(StatusCode::kUnsupported) << "Resize of a non-f32 or rank < 2 tensor";
  for (size_t d = 0; d < r; ++d)
    if (x[d] == 0 && y[d] > 0) return error(StatusCode::kUnsupported) << "Resize of an empty dim to a non-empty one";
  const std::vector<kern::ResizeAxis> axes = lowering::resize_axes(g, n);
  for (size_t d = 0; d + 2 < r; ++d)
    if (x[d] != y[d] || !kern::resize_axis_is_identity(axes[d], y[d]))
      return error(StatusCode::kUnsupported) << "Resize of a dim other than the last two";
  const kern::ResizeAxis rows = axes[r - 2], cols = axes[r - 1];
  const int64_t outer = shape_numel(Shape(y.begin(), y.end() - 2)), ih = x[r - 2], iw = x[r - 1], oh = y[r - 2],
                ow = y[r - 1];
  const std::vector<ConstPtr> tables = {
      make_const_bytes(rows.index.data(), rows.index.size() * 8), make_const(rows.weight),
      make_const_bytes(cols.index.data(), cols.index.size() * 8), make_const(cols.weight)};
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const std::string what = gl.grp.name;
  gl.ds.copy_launches = 1;
  gl.ds.prepare = [=](Context&) -> Status {
    for (const ConstPtr& c : tables) FUSERT_RETURN_IF_ERROR(c->upload(what));
    return Status();
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    ResizeTables t;
    t.row_taps = rows.taps;
    t.col_taps = cols.taps;
    t.row_index = static_cast<const int64_t*>(tables[0]->raw());
    t.row_weight = tables[1]->get();
    t.col_index = static_cast<const int64_t*>(tables[2]->raw());
    t.col_weight = tables[3]->get();
    return cuda_status(resize_2d(outer, ih, iw, oh, ow, t, env.dev.f32(xi), env.dev.f32(yi), env.ctx.stream()),
                       "resize_2d", what);
  };
  return Status();
}

Status lower_tile_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& x = g.value(n.inputs[0]).shape;
  const Shape& y = g.value(n.outputs[0]).shape;
  const size_t esize = dtype_size(g.value(n.inputs[0]).dtype);
  if (!copyable(y, esize) || y.empty() || x.size() != y.size())
    return error(StatusCode::kUnsupported) << "Tile of rank 0 or above " << kMaxCopyRank << " or its dtype";
  const std::vector<int64_t> begin(x.size(), 0);
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const std::string what = gl.grp.name;
  const int rank = static_cast<int>(x.size()), eb = static_cast<int>(esize);
  gl.ds.copy_launches = 1;
  gl.ds.run = [=](const RunEnv& env) -> Status {  // y[i] = x[i mod x's shape], every tile in one launch
    return cuda_status(pad_map(rank, y.data(), x.data(), begin.data(), PadMode::kWrap, nullptr, env.dev.raw(xi),
                               env.dev.raw(yi), eb, env.ctx.stream()),
                       "pad_map", what);
  };
  return Status();
}

}  // namespace fusert::cuda
