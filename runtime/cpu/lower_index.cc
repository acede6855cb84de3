// CPU lowering of the element-indexed ops (kernels/cpu/index_kernels.h: GatherElements,
// ScatterElements, GatherND, ScatterND, OneHot, TopK, Trilu, CumSum) and of DepthToSpace / SpaceToDepth (a 6-D
// cpu::transpose). Each is one opaque step; the CUDA backend runs the same steps through its host fallback. Indices are
// range-checked before the kernel runs (an error names node, tensor and position).
#include <algorithm>

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/index_kernels.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

namespace {

using cpu_lowering::esize_of;
using cpu_lowering::shape_of;

cpu::ElemType elem_type_of(DType t) {
  return t == DType::kI32 ? cpu::ElemType::kI32 : t == DType::kI64 ? cpu::ElemType::kI64 : cpu::ElemType::kF32;
}

// Checks every index of `ii` (count values) is in [-len, len).
void check_indices(const Graph& g, const Node& n, ValueId ii, int64_t len, Step& s) {
  const int64_t count = shape_numel(shape_of(g, ii));
  const bool i32 = g.value(ii).dtype == DType::kI32;
  const std::string node = n.name, op = op_name(n.op), tensor = g.value(ii).name;
  s.check = [=](const BufferTable& b) -> Status {
    for (int64_t k = 0; k < count; ++k) {
      const int64_t v = i32 ? static_cast<const int32_t*>(b.raw(ii))[k] : static_cast<const int64_t*>(b.raw(ii))[k];
      if (v < -len || v >= len) {
        return error(StatusCode::kInvalidArgument)
               << "node '" << node << "' (" << op << "): index " << v << " at position " << k << " of '" << tensor
               << "' is out of range [-" << len << ", " << len << ")";
      }
    }
    return Status();
  };
}

int64_t scalar_input(const Graph& g, ValueId id) {
  const Tensor& t = g.value(id).data;
  return t.dtype() == DType::kI64 ? t.i64()[0] : static_cast<const int32_t*>(t.raw())[0];
}

cpu::ScatterReduce scatter_reduce(const std::string& r) {
  if (r == "add") return cpu::ScatterReduce::kAdd;
  if (r == "mul") return cpu::ScatterReduce::kMul;
  if (r == "max") return cpu::ScatterReduce::kMax;
  if (r == "min") return cpu::ScatterReduce::kMin;
  return cpu::ScatterReduce::kNone;
}

// Data (input 0) and indices (input 1) of GatherElements / ScatterElements viewed around the
// node's axis; sets the step's index check and marks it a reference loop.
struct IndexedAxis {
  cpu::AxisView xv, iv;
  size_t esize;
  bool i32;
};

IndexedAxis indexed_axis(const Graph& g, const Node& n, Step& s) {
  const int64_t axis = n.attr_i("axis");
  IndexedAxis a{cpu::axis_view_of(shape_of(g, n.inputs[0]), axis), cpu::axis_view_of(shape_of(g, n.inputs[1]), axis),
                esize_of(g, n.inputs[0]), g.value(n.inputs[1]).dtype == DType::kI32};
  check_indices(g, n, n.inputs[1], a.xv.len, s);
  s.reference_loop = true;
  return a;
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(GatherElements) {
  const Node& n = NODE;
  const IndexedAxis a = indexed_axis(g, n, s);
  const ValueId xi = n.inputs[0], ii = n.inputs[1], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::gather_elements(a.xv, a.iv, a.esize, b.raw(xi), b.raw(ii), a.i32, b.raw(yi));
  };
  return Status();
}

LOWER(ScatterElements) {
  const Node& n = NODE;
  const IndexedAxis a = indexed_axis(g, n, s);
  const cpu::ScatterReduce op = scatter_reduce(n.attr_s("reduction"));
  const ValueId xi = n.inputs[0], ii = n.inputs[1], ui = n.inputs[2], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::scatter_elements(a.xv, a.iv, a.esize, op, b.raw(xi), b.raw(ii), a.i32, b.raw(ui), b.raw(yi));
  };
  return Status();
}

// GatherND (batch_dims b) and ScatterND (b 0): the NdView of data X and indices Idx, and the step's
// check that every index is within its dim.
static cpu::NdView nd_view(const Graph& g, const Node& n, int64_t b, Step& s) {
  const Shape &x = shape_of(g, n.inputs[0]), &idx = shape_of(g, n.inputs[1]);
  cpu::NdView v;
  v.m = idx.back();
  for (int64_t d = 0; d < b; ++d) v.batches *= x[static_cast<size_t>(d)];
  v.count = shape_numel(idx) / v.m / v.batches;
  v.dims.assign(x.begin() + b, x.begin() + b + v.m);
  for (size_t d = static_cast<size_t>(b + v.m); d < x.size(); ++d) v.slice *= x[d];
  const ValueId ii = n.inputs[1];
  const std::string node = n.name, op = op_name(n.op), tensor = g.value(ii).name;
  s.check = [=](const BufferTable& t) -> Status {
    const int64_t* p = static_cast<const int64_t*>(t.raw(ii));
    for (int64_t k = 0; k < v.batches * v.count * v.m; ++k) {
      const int64_t dim = v.dims[static_cast<size_t>(k % v.m)];
      if (p[k] < -dim || p[k] >= dim) {
        return error(StatusCode::kInvalidArgument)
               << "node '" << node << "' (" << op << "): index " << p[k] << " at position " << k << " of '" << tensor
               << "' is out of range [-" << dim << ", " << dim << ")";
      }
    }
    return Status();
  };
  s.reference_loop = true;
  return v;
}

LOWER(GatherND) {
  const Node& n = NODE;
  const cpu::NdView v = nd_view(g, n, n.attr_i("batch_dims"), s);
  const size_t es = esize_of(g, n.inputs[0]);
  const ValueId xi = n.inputs[0], ii = n.inputs[1], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::gather_nd(v, es, b.raw(xi), static_cast<const int64_t*>(b.raw(ii)), b.raw(yi));
  };
  return Status();
}

LOWER(ScatterND) {
  const Node& n = NODE;
  const cpu::NdView v = nd_view(g, n, 0, s);
  const size_t es = esize_of(g, n.inputs[0]);
  const int64_t elems = shape_numel(shape_of(g, n.inputs[0]));
  const cpu::ScatterReduce op = scatter_reduce(n.attr_s("reduction"));
  const ValueId xi = n.inputs[0], ii = n.inputs[1], ui = n.inputs[2], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::scatter_nd(v, es, op, b.raw(xi), elems, static_cast<const int64_t*>(b.raw(ii)), b.raw(ui), b.raw(yi));
  };
  return Status();
}

LOWER(OneHot) {
  const Node& n = NODE;
  const Shape& y = shape_of(g, n.outputs[0]);
  const size_t axis = static_cast<size_t>(n.attr_i("axis"));
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= y[d];
  for (size_t d = axis + 1; d < y.size(); ++d) inner *= y[d];
  const int64_t depth = y[axis];
  const cpu::ElemType it = elem_type_of(g.value(n.inputs[0]).dtype);
  const size_t es = esize_of(g, n.outputs[0]);
  const ValueId xi = n.inputs[0], vi = n.inputs[2], yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    const auto* values = static_cast<const uint8_t*>(b.raw(vi));
    cpu::one_hot(outer, depth, inner, it, b.raw(xi), es, values, values + es, b.raw(yi));
  };
  return Status();
}

LOWER(TopK) {
  const Node& n = NODE;
  const cpu::AxisView v = cpu::axis_view_of(shape_of(g, n.inputs[0]), n.attr_i("axis"));
  const int64_t k = shape_of(g, n.outputs[0])[static_cast<size_t>(n.attr_i("axis"))];
  const bool largest = n.attr_i("largest") != 0;
  const cpu::ElemType t = elem_type_of(g.value(n.inputs[0]).dtype);
  const ValueId xi = n.inputs[0], vi = n.outputs[0], ii = n.outputs[1];
  s.inputs.resize(1);
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    cpu::top_k(v, k, largest, t, b.raw(xi), b.raw(vi), static_cast<int64_t*>(b.raw(ii)));
  };
  return Status();
}

LOWER(Trilu) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  const int64_t rows = x[x.size() - 2], cols = x.back(), batch = shape_numel(x) / std::max<int64_t>(1, rows * cols);
  // k beyond the matrix keeps all or nothing; clamped so that row + k cannot overflow
  const int64_t k = std::clamp<int64_t>(
      n.inputs.size() > 1 && n.inputs[1] != kNoValue ? scalar_input(g, n.inputs[1]) : 0, -rows - 1, cols + 1);
  const bool upper = n.attr_i("upper") != 0;
  const size_t es = esize_of(g, n.inputs[0]);
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) { cpu::trilu(batch, rows, cols, k, upper, es, b.raw(xi), b.raw(yi)); };
  return Status();
}

LOWER(CumSum) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  int64_t axis = scalar_input(g, n.inputs[1]);
  if (axis < 0) axis += static_cast<int64_t>(x.size());
  const cpu::AxisView v = cpu::axis_view_of(x, axis);
  const bool exclusive = n.attr_i("exclusive") != 0, reverse = n.attr_i("reverse") != 0;
  const cpu::ElemType t = elem_type_of(g.value(n.inputs[0]).dtype);
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) { cpu::cumsum(v, exclusive, reverse, t, b.raw(xi), b.raw(yi)); };
  return Status();
}

// DepthToSpace: X [N, C, H, W] seen as [N, b, b, C', H, W] (DCR) or [N, C', b, b, H, W] (CRD),
// permuted to [N, C', H, b, W, b] = Y [N, C', H*b, W*b]. SpaceToDepth: X seen as
// [N, C, H', b, W', b], permuted to [N, b, b, C, H', W'] = Y [N, C*b*b, H', W'].
LOWER(DepthToSpace) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  const int64_t b = n.attr_i("blocksize"), c = x[1] / (b * b);
  const bool dcr = n.attr_s("mode") == "DCR";
  const std::vector<int64_t> view =
      dcr ? std::vector<int64_t>{x[0], b, b, c, x[2], x[3]} : std::vector<int64_t>{x[0], c, b, b, x[2], x[3]};
  const std::vector<int64_t> perm =
      dcr ? std::vector<int64_t>{0, 3, 4, 1, 5, 2} : std::vector<int64_t>{0, 1, 4, 2, 5, 3};
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& t) { cpu::transpose(view, perm, t.f32(xi), t.f32(yi)); };
  return Status();
}

LOWER(SpaceToDepth) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  const int64_t b = n.attr_i("blocksize");
  const std::vector<int64_t> view = {x[0], x[1], x[2] / b, b, x[3] / b, b}, perm = {0, 3, 5, 1, 2, 4};
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& t) { cpu::transpose(view, perm, t.f32(xi), t.f32(yi)); };
  return Status();
}

}  // namespace fusert
