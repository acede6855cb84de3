// CPU lowering of sequence-model ops (LayerNormalization, Gelu, reductions, Split, Slice,
// Gather, Unsqueeze, Where, Cast). Constant inputs (axes, starts, ...) are read here, once.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "graph/unary.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/data_movement.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/index_kernels.h"
#include "kernels/cpu/sequence_kernels.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"
#include "runtime/lowering/spec.h"

namespace fusert {

namespace {

using cpu_lowering::esize_of;
using cpu_lowering::padded;
using cpu_lowering::shape_of;

std::vector<int64_t> const_ints(const Graph& g, ValueId id) {
  const Tensor& t = g.value(id).data;
  return std::vector<int64_t>(t.i64(), t.i64() + t.numel());
}

// [outer, len, inner] view of `x` around `axis`.
void axis_view(const Shape& x, int64_t axis, int64_t* outer, int64_t* len, int64_t* inner) {
  const cpu::AxisView v = cpu::axis_view_of(x, axis);
  *outer = v.outer, *len = v.len, *inner = v.inner;
}

// True when `axes` (negative counting from the end) are the last axes of `x`, each once: the
// reduced elements of one output are then contiguous.
bool trailing_axes(const Shape& x, std::vector<int64_t> axes) {
  const int64_t r = static_cast<int64_t>(x.size());
  for (int64_t& a : axes) a = a < 0 ? a + r : a;
  std::sort(axes.begin(), axes.end());
  for (size_t k = 0; k < axes.size(); ++k)
    if (axes[k] != r - static_cast<int64_t>(axes.size() - k)) return false;
  return !axes.empty();
}

int dtype_code(DType t) {
  switch (t) {
    case DType::kF32:
      return 1;
    case DType::kU8:
      return 2;
    case DType::kI8:
      return 3;
    case DType::kI32:
      return 6;
    case DType::kI64:
      return 7;
    default:
      return 9;
  }
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(LayerNormalization) {
  const Node& n = NODE;
  int64_t outer, len, inner;
  axis_view(shape_of(g, n.inputs[0]), n.attr_i("axis"), &outer, &len, &inner);
  inner *= len;  // normalised over all dims from axis on
  float eps = static_cast<float>(n.attr_f("epsilon"));
  ValueId xi = n.inputs[0], sc = n.inputs[1], yi = n.outputs[0];
  ValueId bi = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  s.run = [=](const BufferTable& b) {
    cpu::layer_norm(outer, inner, b.f32(xi), b.f32(sc), bi == kNoValue ? nullptr : b.f32(bi), eps, b.f32(yi));
  };
  return Status();
}

LOWER(Gelu) {
  const Node& n = NODE;
  int64_t count = shape_numel(shape_of(g, n.outputs[0]));
  bool tanh_approx = n.attr_s("approximate") == "tanh";
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  const cpu::EpOp op = tanh_approx ? cpu::EpOp::kGeluTanh : cpu::EpOp::kGelu;
  s.run = [=](const BufferTable& b) { cpu::unary(op, 0.f, 0.f, count, b.f32(xi), b.f32(yi)); };
  return Status();
}

namespace {

// ONNX's reductions as (a map of each element, a combine that composes over axes, a map of
// each result): ReduceL2 = sqrt of the sum of squares, ReduceLogSum = log of the sum, ...
struct ReduceSpec {
  enum Pre { kNone, kAbs, kSquare } pre = kNone;
  int combine = 0;  // cpu::ReduceOp as int, or -1 max, -2 min
  enum Post { kKeep, kSqrt, kLog } post = kKeep;
};

float reduce_pre(ReduceSpec::Pre p, float v) { return p == ReduceSpec::kAbs ? std::fabs(v) : v * v; }

// Reduces the (sorted) axes one at a time from the last, through a scratch buffer.
Status lower_reduce(const Graph& g, int ni, Step& s, ReduceSpec spec) {
  const Node& n = NODE;
  Shape x = shape_of(g, n.inputs[0]);
  std::vector<int64_t> axes = n.attr_ints("axes");
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  const bool mean = spec.combine == static_cast<int>(cpu::ReduceOp::kMean);
  if (axes.empty() && spec.pre == ReduceSpec::kNone && spec.post == ReduceSpec::kKeep) {  // noop_with_empty_axes
    size_t bytes = static_cast<size_t>(shape_numel(x)) * 4;
    s.run = [=](const BufferTable& b) { std::memcpy(b.raw(yi), b.raw(xi), bytes); };
    return Status();
  }
  if (mean && shape_numel(x) > 0 && trailing_axes(x, axes)) {  // a mean over the last axes (a global pool): one pass
    const int64_t len = shape_numel(x) / std::max<int64_t>(shape_numel(shape_of(g, yi)), 1);
    const int64_t rows = len > 0 ? shape_numel(x) / len : 0;
    s.run = [=](const BufferTable& b) { cpu::global_avg_pool(1, rows, len, b.f32(xi), b.f32(yi)); };
    return Status();
  }
  s.run = [=](const BufferTable& b) {
    std::vector<float> cur(b.f32(xi), b.f32(xi) + shape_numel(x)), next;
    if (spec.pre != ReduceSpec::kNone)
      for (float& v : cur) v = reduce_pre(spec.pre, v);
    Shape sh = x;
    for (size_t k = axes.size(); k-- > 0;) {
      int64_t outer, len, inner;
      axis_view(sh, axes[k], &outer, &len, &inner);
      next.assign(static_cast<size_t>(outer * inner), 0.f);
      if (spec.combine < 0) {
        cpu::reduce_extreme(outer, len, inner, spec.combine == -1, cur.data(), next.data());
      } else {
        cpu::reduce(outer, len, inner, static_cast<cpu::ReduceOp>(spec.combine), cur.data(), next.data());
      }
      sh[static_cast<size_t>(axes[k])] = 1;
      cur.swap(next);
    }
    if (spec.post != ReduceSpec::kKeep)
      for (float& v : cur) v = spec.post == ReduceSpec::kSqrt ? std::sqrt(v) : std::log(v);
    std::memcpy(b.f32(yi), cur.data(), cur.size() * sizeof(float));
  };
  return Status();
}

constexpr int kSum = static_cast<int>(cpu::ReduceOp::kSum);

}  // namespace

LOWER(ReduceMean) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, static_cast<int>(cpu::ReduceOp::kMean)}); }
LOWER(ReduceSum) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, kSum}); }
LOWER(ReduceMax) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, -1}); }
LOWER(ReduceMin) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, -2}); }
LOWER(ReduceProd) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, static_cast<int>(cpu::ReduceOp::kProd)}); }
LOWER(ReduceLogSumExp) {
  return lower_reduce(g, ni, s, {ReduceSpec::kNone, static_cast<int>(cpu::ReduceOp::kLogSumExp)});
}
LOWER(ReduceL1) { return lower_reduce(g, ni, s, {ReduceSpec::kAbs, kSum}); }
LOWER(ReduceL2) { return lower_reduce(g, ni, s, {ReduceSpec::kSquare, kSum, ReduceSpec::kSqrt}); }
LOWER(ReduceSumSquare) { return lower_reduce(g, ni, s, {ReduceSpec::kSquare, kSum}); }
LOWER(ReduceLogSum) { return lower_reduce(g, ni, s, {ReduceSpec::kNone, kSum, ReduceSpec::kLog}); }

LOWER(Split) {
  const Node& n = NODE;
  int64_t outer, len, inner;
  axis_view(shape_of(g, n.inputs[0]), n.attr_i("axis"), &outer, &len, &inner);
  size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0];
  std::vector<ValueId> outs = n.outputs;
  std::vector<int64_t> lens;
  for (ValueId o : outs) lens.push_back(shape_of(g, o)[static_cast<size_t>(n.attr_i("axis"))]);
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) {
    int64_t start = 0;
    for (size_t i = 0; i < outs.size(); ++i) {
      cpu::slice_axis(outer, len, inner, start, 1, lens[i], es, b.raw(xi), b.raw(outs[i]));
      start += lens[i];
    }
  };
  return Status();
}

LOWER(Slice) {
  const Node& n = NODE;
  Shape x = shape_of(g, n.inputs[0]);
  std::vector<int64_t> starts = const_ints(g, n.inputs[1]), axes, steps;
  if (n.inputs.size() > 3 && n.inputs[3] != kNoValue)
    axes = const_ints(g, n.inputs[3]);
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (n.inputs.size() > 4 && n.inputs[4] != kNoValue)
    steps = const_ints(g, n.inputs[4]);
  else
    steps.assign(starts.size(), 1);
  const Shape& y = shape_of(g, n.outputs[0]);
  size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  // Each axis (ONNX forbids repeats) once, at lowering: its start clamped as shape inference does.
  struct Cut {
    int64_t axis, begin, step, len;
  };
  std::vector<Cut> cuts;
  for (size_t i = 0; i < starts.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + static_cast<int64_t>(x.size()) : axes[i];
    const int64_t d = x[static_cast<size_t>(a)], st = steps[i], v = starts[i] < 0 ? starts[i] + d : starts[i];
    const int64_t begin = st > 0 ? std::min(std::max<int64_t>(v, 0), d) : std::min(std::max<int64_t>(v, 0), d - 1);
    cuts.push_back({a, begin, st, y[static_cast<size_t>(a)]});
  }
  // One axis (what exporters write: q/k/v splits, class tokens): straight from x into y.
  if (cuts.size() == 1) {
    const Cut c = cuts[0];
    int64_t outer, len, inner;
    axis_view(x, c.axis, &outer, &len, &inner);
    s.run = [=](const BufferTable& b) {
      cpu::slice_axis(outer, len, inner, c.begin, c.step, c.len, es, b.raw(xi), b.raw(yi));
    };
    return Status();
  }
  // Several axes: one at a time through a scratch buffer.
  s.run = [=](const BufferTable& b) {
    std::vector<uint8_t> cur(static_cast<const uint8_t*>(b.raw(xi)),
                             static_cast<const uint8_t*>(b.raw(xi)) + shape_numel(x) * static_cast<int64_t>(es)),
        next;
    Shape sh = x;
    for (const Cut& c : cuts) {
      int64_t outer, len, inner;
      axis_view(sh, c.axis, &outer, &len, &inner);
      next.resize(static_cast<size_t>(outer * c.len * inner) * es);
      cpu::slice_axis(outer, len, inner, c.begin, c.step, c.len, es, cur.data(), next.data());
      sh[static_cast<size_t>(c.axis)] = c.len;
      cur.swap(next);
    }
    std::memcpy(b.raw(yi), cur.data(), cur.size());
  };
  return Status();
}

LOWER(Gather) {
  const Node& n = NODE;
  int64_t outer, len, inner;
  int64_t axis = n.attr_i("axis");
  axis_view(shape_of(g, n.inputs[0]), axis, &outer, &len, &inner);
  int64_t count = shape_numel(shape_of(g, n.inputs[1]));
  bool i32 = g.value(n.inputs[1]).dtype == DType::kI32;
  size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0], ii = n.inputs[1], yi = n.outputs[0];
  std::string node_name = n.name, idx_name = g.value(ii).name;
  auto index_at = [=](const BufferTable& b, int64_t k) {
    return i32 ? static_cast<int64_t>(static_cast<const int32_t*>(b.raw(ii))[k])
               : static_cast<const int64_t*>(b.raw(ii))[k];
  };
  s.check = [=](const BufferTable& b) -> Status {
    for (int64_t k = 0; k < count; ++k) {
      int64_t v = index_at(b, k);
      if (v < -len || v >= len) {
        return error(StatusCode::kInvalidArgument)
               << "node '" << node_name << "' (Gather): index " << v << " at position " << k << " of '" << idx_name
               << "' is out of range [0, " << len << ")";
      }
    }
    return Status();
  };
  s.run = [=](const BufferTable& b) {
    std::vector<int64_t> idx(static_cast<size_t>(count));
    for (int64_t k = 0; k < count; ++k) idx[static_cast<size_t>(k)] = index_at(b, k);
    cpu::gather(outer, len, inner, idx.data(), count, es, b.raw(xi), b.raw(yi));
  };
  return Status();
}

LOWER(Unsqueeze) {
  const Node& n = NODE;
  size_t bytes = static_cast<size_t>(shape_numel(shape_of(g, n.outputs[0]))) * esize_of(g, n.outputs[0]);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.kernel = "copy";
  s.run = [=](const BufferTable& b) { std::memcpy(b.raw(yi), b.raw(xi), bytes); };
  return Status();
}

LOWER(Where) {
  const Node& n = NODE;
  Shape out = shape_of(g, n.outputs[0]);
  Shape cs = padded(shape_of(g, n.inputs[0]), out.size()), as = padded(shape_of(g, n.inputs[1]), out.size()),
        bs = padded(shape_of(g, n.inputs[2]), out.size());
  size_t es = esize_of(g, n.outputs[0]);
  ValueId ci = n.inputs[0], ai = n.inputs[1], bi = n.inputs[2], yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    cpu::where(out, cs, static_cast<const uint8_t*>(b.raw(ci)), as, b.raw(ai), bs, b.raw(bi), es, b.raw(yi));
  };
  return Status();
}

LOWER(Cast) {
  const Node& n = NODE;
  int64_t count = shape_numel(shape_of(g, n.outputs[0]));
  int from = dtype_code(g.value(n.inputs[0]).dtype), to = dtype_code(g.value(n.outputs[0]).dtype);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::cast(count, from, b.raw(xi), to, b.raw(yi)); };
  return Status();
}

LOWER(Expand) {
  const Node& n = NODE;
  const Shape xs = shape_of(g, n.inputs[0]), ys = shape_of(g, n.outputs[0]);
  const size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) { cpu::expand_rows(xs, ys, es, b.raw(xi), b.raw(yi)); };
  return Status();
}

LOWER(Pad) {
  const Node& n = NODE;
  const Shape xs = shape_of(g, n.inputs[0]);
  const std::vector<int64_t> pads = n.attr_ints("pads");  // canonicalised by shape inference
  const std::string& m = n.attr_s("mode");
  const int mode = m == "constant" ? 0 : m == "reflect" ? 1 : 2;
  const std::array<uint8_t, 8> value = lowering::pad_constant(g, n);
  const size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) { cpu::pad_rows(xs, pads, mode, value.data(), es, b.raw(xi), b.raw(yi)); };
  return Status();
}

LOWER(Tile) {
  const Node& n = NODE;
  const Shape xs = shape_of(g, n.inputs[0]), ys = shape_of(g, n.outputs[0]);
  const size_t es = esize_of(g, n.inputs[0]);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) { cpu::tile_rows(xs, ys, es, b.raw(xi), b.raw(yi)); };
  return Status();
}

static Status lower_arg_extreme(const Graph& g, int ni, Step& s, bool min) {
  const Node& n = NODE;
  int64_t outer, len, inner;
  axis_view(shape_of(g, n.inputs[0]), n.attr_i("axis"), &outer, &len, &inner);
  const bool last = n.attr_i("select_last_index") != 0;
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.reference_loop = true;
  s.run = [=](const BufferTable& b) {
    cpu::argmax(outer, len, inner, last, b.f32(xi), static_cast<int64_t*>(b.raw(yi)), min);
  };
  return Status();
}

LOWER(ArgMax) { return lower_arg_extreme(g, ni, s, false); }
LOWER(ArgMin) { return lower_arg_extreme(g, ni, s, true); }

LOWER(Hardmax) {
  const Node& n = NODE;
  int64_t outer, len, inner;
  axis_view(shape_of(g, n.inputs[0]), n.attr_i("axis"), &outer, &len, &inner);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.reference_loop = true;  // one compare per element, as ArgMax
  s.run = [=](const BufferTable& b) { cpu::hardmax(outer, len, inner, b.f32(xi), b.f32(yi)); };
  return Status();
}

}  // namespace fusert
