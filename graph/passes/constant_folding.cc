// Constant folding: a cheap data-movement or arithmetic node whose inputs are all bound
// initializers (constants or weights, never graph inputs) is evaluated here, with small direct
// loops (passes never call a kernel), and its output value becomes a constant initializer with
// the same name. Results over kMaxFoldElements stay nodes (the file would balloon), as do
// graph outputs (an output must be produced by a step) and unsupported dtypes.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

#include "graph/base/unary_math.h"
#include "graph/passes/fold_quant.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/pass.h"
#include "graph/shape_inference.h"
#include "graph/unary.h"

namespace fusert {

namespace {

constexpr int64_t kMaxFoldElements = int64_t{16} << 20;

using Strides = std::vector<int64_t>;

Strides strides_of(const Shape& s) {
  Strides st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

// Input strides for an output of rank `rank`, `in` right-aligned, broadcast dims get stride 0.
Strides broadcast_strides(const Shape& in, size_t rank) {
  Strides st(rank, 0), own = strides_of(in);
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != 1) st[rank - in.size() + i] = own[i];
  }
  return st;
}

// Calls f(k, offsets) for output element k in row-major order, where offsets[j] =
// base[j] + sum_d coord_d * strides[j][d]: one affine map per source (transpose, slice,
// broadcast are all affine in the output coordinate).
template <typename F>
void for_each_affine(const Shape& out, const std::vector<int64_t>& base, const std::vector<Strides>& strides, F f) {
  const int64_t total = shape_numel(out);
  std::vector<int64_t> coord(out.size(), 0), off = base;
  for (int64_t k = 0; k < total; ++k) {
    f(k, off);
    for (size_t d = out.size(); d-- > 0;) {  // odometer step, updating offsets incrementally
      for (size_t j = 0; j < off.size(); ++j) off[j] += strides[j][d];
      if (++coord[d] < out[d]) break;
      for (size_t j = 0; j < off.size(); ++j) off[j] -= strides[j][d] * out[d];
      coord[d] = 0;
    }
  }
}

Tensor affine_copy(const Tensor& in, const Shape& out, int64_t base, const Strides& st) {
  Tensor y(in.dtype(), out);
  const size_t es = dtype_size(in.dtype());
  const auto* src = static_cast<const uint8_t*>(in.raw());
  auto* dst = static_cast<uint8_t*>(y.raw());
  for_each_affine(out, {base}, {st}, [&](int64_t k, const std::vector<int64_t>& off) {
    std::memcpy(dst + static_cast<size_t>(k) * es, src + static_cast<size_t>(off[0]) * es, es);
  });
  return y;
}

int64_t norm_axis(int64_t a, size_t rank) { return a < 0 ? a + static_cast<int64_t>(rank) : a; }

std::vector<int64_t> ints_of(const Tensor* t) {
  return t ? std::vector<int64_t>(t->i64(), t->i64() + t->numel()) : std::vector<int64_t>{};
}

// What one fold sees: the node, its inputs' data (nullptr for an omitted optional input),
// and the already-inferred output shape and dtype.
struct FoldInput {
  const Node& node;
  std::vector<const Tensor*> in;
  Shape out_shape;
  DType out_dtype;
};

Tensor fold_transpose(const FoldInput& f) {
  const Tensor& x = *f.in[0];
  const std::vector<int64_t>& perm = f.node.attr_ints("perm");
  Strides own = strides_of(x.shape()), st(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    st[d] = own[static_cast<size_t>(perm[d])];  // Y[.., i_d, ..] = X[.., i_perm[d], ..]
  return affine_copy(x, f.out_shape, 0, st);
}

// Y = X[starts:ends:steps] per axis, starts clamped as in shape inference; output sizes come
// from the inferred shape, so only the first index and the step per axis are needed.
Tensor fold_slice(const FoldInput& f) {
  const Tensor& x = *f.in[0];
  std::vector<int64_t> starts = ints_of(f.in[1]), axes = ints_of(f.in.size() > 3 ? f.in[3] : nullptr),
                       steps = ints_of(f.in.size() > 4 ? f.in[4] : nullptr);
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  Strides own = strides_of(x.shape()), st = own;
  int64_t base = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = static_cast<size_t>(norm_axis(axes[i], x.shape().size()));
    int64_t d = x.shape()[a], s = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t b = steps[i] > 0 ? std::min(std::max<int64_t>(s, 0), d) : std::min(std::max<int64_t>(s, -1), d - 1);
    if (f.out_shape[a] > 0) base += b * own[a];
    st[a] = steps[i] * own[a];
  }
  return affine_copy(x, f.out_shape, base, st);
}

// Y = inputs joined along axis: [outer, len_i, inner] blocks copied in turn.
Tensor fold_concat(const FoldInput& f) {
  Tensor y(f.out_dtype, f.out_shape);
  const int64_t axis = f.node.attr_i("axis");
  const size_t es = dtype_size(f.out_dtype);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= f.out_shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < f.out_shape.size(); ++d) inner *= f.out_shape[d];
  const int64_t out_row = f.out_shape[static_cast<size_t>(axis)] * inner;
  int64_t at = 0;
  for (const Tensor* t : f.in) {
    const int64_t row = t->shape()[static_cast<size_t>(axis)] * inner;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(static_cast<uint8_t*>(y.raw()) + static_cast<size_t>(o * out_row + at) * es,
                  static_cast<const uint8_t*>(t->raw()) + static_cast<size_t>(o * row) * es,
                  static_cast<size_t>(row) * es);
    }
    at += row;
  }
  return y;
}

// Y[o, i..., n] = X[o, idx[i...], n] along axis; negative indices count from the end.
std::optional<Tensor> fold_gather(const FoldInput& f) {
  const Tensor& x = *f.in[0];
  const Tensor& idx = *f.in[1];
  const int64_t axis = f.node.attr_i("axis"), len = x.shape()[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape()[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < x.shape().size(); ++d) inner *= x.shape()[d];
  const size_t es = dtype_size(x.dtype());
  Tensor y(f.out_dtype, f.out_shape);
  const int64_t count = idx.numel();
  for (int64_t k = 0; k < count; ++k) {
    int64_t v = idx.dtype() == DType::kI64 ? idx.i64()[k] : static_cast<const int32_t*>(idx.raw())[k];
    if (v < -len || v >= len) return std::nullopt;  // the runtime reports it with context
    if (v < 0) v += len;
    for (int64_t o = 0; o < outer; ++o) {
      std::memcpy(static_cast<uint8_t*>(y.raw()) + static_cast<size_t>((o * count + k) * inner) * es,
                  static_cast<const uint8_t*>(x.raw()) + static_cast<size_t>((o * len + v) * inner) * es,
                  static_cast<size_t>(inner) * es);
    }
  }
  return y;
}

double load(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.f32()[i];
    case DType::kI32:
      return static_cast<const int32_t*>(t.raw())[i];
    case DType::kBool:
    case DType::kU8:
      return static_cast<const uint8_t*>(t.raw())[i];
    case DType::kI8:
      return static_cast<const int8_t*>(t.raw())[i];
    default:
      return static_cast<double>(t.i64()[i]);
  }
}

// Cast between f32, i64, i32 and bool: float to integer truncates toward zero (as the CPU
// kernel does); a non-finite or out-of-range value stays a node so the runtime decides.
std::optional<Tensor> fold_cast(const FoldInput& f) {
  const Tensor& x = *f.in[0];
  Tensor y(f.out_dtype, f.out_shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (x.dtype() == DType::kI64 && f.out_dtype == DType::kI64) {
      y.i64()[i] = x.i64()[i];
      continue;
    }
    double v = load(x, i);
    switch (f.out_dtype) {
      case DType::kF32:
        y.f32()[i] = x.dtype() == DType::kF32 ? x.f32()[i] : static_cast<float>(v);
        break;
      case DType::kI64:
        if (!std::isfinite(v) || std::fabs(v) >= 9.2e18) return std::nullopt;
        y.i64()[i] = static_cast<int64_t>(v);
        break;
      case DType::kI32:
        if (!std::isfinite(v) || std::fabs(v) >= 2147483648.0) return std::nullopt;
        static_cast<int32_t*>(y.raw())[i] = static_cast<int32_t>(v);
        break;
      case DType::kBool:
        static_cast<uint8_t*>(y.raw())[i] = v != 0 ? 1 : 0;
        break;
      default:
        return std::nullopt;
    }
  }
  return y;
}

// C = A op B with numpy broadcasting. f32 in float arithmetic (bit-identical to the CPU
// kernel); i64 Add/Sub/Mul exact, Div truncating (integer division by zero stays a node).
std::optional<Tensor> fold_binary(const FoldInput& f) {
  const Tensor& a = *f.in[0];
  const Tensor& b = *f.in[1];
  if (a.dtype() != b.dtype() || f.out_dtype != a.dtype()) return std::nullopt;
  const OpKind op = f.node.op;
  const size_t rank = f.out_shape.size();
  Tensor y(f.out_dtype, f.out_shape);
  bool ok = true;
  auto run = [&](auto fn) {
    for_each_affine(f.out_shape, {0, 0}, {broadcast_strides(a.shape(), rank), broadcast_strides(b.shape(), rank)},
                    [&](int64_t k, const std::vector<int64_t>& off) { fn(k, off[0], off[1]); });
  };
  if (a.dtype() == DType::kF32) {
    const float *pa = a.f32(), *pb = b.f32();
    float* py = y.f32();
    switch (op) {
      case OpKind::kAdd:
        run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] + pb[j]; });
        break;
      case OpKind::kSub:
        run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] - pb[j]; });
        break;
      case OpKind::kMul:
        run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] * pb[j]; });
        break;
      case OpKind::kDiv:
        run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] / pb[j]; });
        break;
      case OpKind::kPow:
        run([&](int64_t k, int64_t i, int64_t j) { py[k] = std::pow(pa[i], pb[j]); });
        break;
      default:
        return std::nullopt;
    }
    return y;
  }
  if (a.dtype() != DType::kI64) return std::nullopt;
  const int64_t *pa = a.i64(), *pb = b.i64();
  int64_t* py = y.i64();
  switch (op) {
    case OpKind::kAdd:
      run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] + pb[j]; });
      break;
    case OpKind::kSub:
      run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] - pb[j]; });
      break;
    case OpKind::kMul:
      run([&](int64_t k, int64_t i, int64_t j) { py[k] = pa[i] * pb[j]; });
      break;
    case OpKind::kDiv:
      run([&](int64_t k, int64_t i, int64_t j) {
        if (pb[j] == 0 || (pb[j] == -1 && pa[i] == std::numeric_limits<int64_t>::min()))  // x86 traps on both
          ok = false;
        else
          py[k] = pa[i] / pb[j];
      });
      break;
    default:
      return std::nullopt;
  }
  if (!ok) return std::nullopt;
  return y;
}

// Element value of a constant as double (f32, i32, i64, bool), for comparisons and extrema of
// shape arithmetic (ONNX exports compare shape vectors: Equal(shape, -1) before Where/Expand).
double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.f32()[i];
    case DType::kI64:
      return static_cast<double>(t.i64()[i]);
    case DType::kI32:
      return static_cast<const int32_t*>(t.raw())[i];
    case DType::kI8:
      return static_cast<const int8_t*>(t.raw())[i];
    default:
      return static_cast<const uint8_t*>(t.raw())[i];
  }
}

// Equal .. Xor (bool result) and Not; i64 compared exactly (below 2^53 as double, else as i64).
std::optional<Tensor> fold_compare(const FoldInput& f) {
  const OpKind op = f.node.op;
  const Tensor& a = *f.in[0];
  Tensor y(DType::kBool, f.out_shape);
  auto* py = static_cast<uint8_t*>(y.raw());
  if (op == OpKind::kNot) {
    for (int64_t k = 0; k < a.numel(); ++k) py[k] = element(a, k) != 0 ? 0 : 1;
    return y;
  }
  const Tensor& b = *f.in[1];
  if (a.dtype() != b.dtype() || a.dtype() == DType::kF16 || a.dtype() == DType::kBF16) return std::nullopt;
  const bool i64 = a.dtype() == DType::kI64;
  const size_t rank = f.out_shape.size();
  for_each_affine(f.out_shape, {0, 0}, {broadcast_strides(a.shape(), rank), broadcast_strides(b.shape(), rank)},
                  [&](int64_t k, const std::vector<int64_t>& off) {
                    const double x = element(a, off[0]), z = element(b, off[1]);
                    const int64_t xi = i64 ? a.i64()[off[0]] : 0, zi = i64 ? b.i64()[off[1]] : 0;
                    bool r = false;
                    switch (op) {
                      case OpKind::kEqual:
                        r = i64 ? xi == zi : x == z;
                        break;
                      case OpKind::kLess:
                        r = i64 ? xi < zi : x < z;
                        break;
                      case OpKind::kGreater:
                        r = i64 ? xi > zi : x > z;
                        break;
                      case OpKind::kLessOrEqual:
                        r = i64 ? xi <= zi : x <= z;
                        break;
                      case OpKind::kGreaterOrEqual:
                        r = i64 ? xi >= zi : x >= z;
                        break;
                      case OpKind::kAnd:
                        r = x != 0 && z != 0;
                        break;
                      case OpKind::kOr:
                        r = x != 0 || z != 0;
                        break;
                      default:  // kXor
                        r = (x != 0) != (z != 0);
                        break;
                    }
                    py[k] = r ? 1 : 0;
                  });
  return y;
}

// Where(condition, X, Y) with numpy broadcasting, any element type (raw bytes).
std::optional<Tensor> fold_where(const FoldInput& f) {
  const Tensor &c = *f.in[0], &a = *f.in[1], &b = *f.in[2];
  if (c.dtype() != DType::kBool || a.dtype() != b.dtype()) return std::nullopt;
  const size_t rank = f.out_shape.size(), es = dtype_size(a.dtype());
  Tensor y(a.dtype(), f.out_shape);
  const auto* pc = static_cast<const uint8_t*>(c.raw());
  const auto *pa = static_cast<const uint8_t*>(a.raw()), *pb = static_cast<const uint8_t*>(b.raw());
  auto* py = static_cast<uint8_t*>(y.raw());
  for_each_affine(
      f.out_shape, {0, 0, 0},
      {broadcast_strides(c.shape(), rank), broadcast_strides(a.shape(), rank), broadcast_strides(b.shape(), rank)},
      [&](int64_t k, const std::vector<int64_t>& off) {
        const uint8_t* src = pc[off[0]] ? pa + static_cast<size_t>(off[1]) * es : pb + static_cast<size_t>(off[2]) * es;
        std::memcpy(py + static_cast<size_t>(k) * es, src, es);
      });
  return y;
}

// Max / Min of f32 or i64 constants (NaN wins, as the kernel).
std::optional<Tensor> fold_extremum(const FoldInput& f) {
  const DType t = f.in[0]->dtype();
  if (t != DType::kF32 && t != DType::kI64) return std::nullopt;
  const bool max = f.node.op == OpKind::kMax;
  const size_t rank = f.out_shape.size();
  std::vector<Strides> st;
  for (const Tensor* x : f.in) {
    if (!x || x->dtype() != t) return std::nullopt;
    st.push_back(broadcast_strides(x->shape(), rank));
  }
  Tensor y(t, f.out_shape);
  for_each_affine(f.out_shape, std::vector<int64_t>(f.in.size(), 0), st,
                  [&](int64_t k, const std::vector<int64_t>& off) {
                    if (t == DType::kI64) {
                      int64_t v = f.in[0]->i64()[off[0]];
                      for (size_t j = 1; j < f.in.size(); ++j) {
                        const int64_t u = f.in[j]->i64()[off[j]];
                        v = max ? std::max(v, u) : std::min(v, u);
                      }
                      y.i64()[k] = v;
                      return;
                    }
                    float v = f.in[0]->f32()[off[0]];
                    for (size_t j = 1; j < f.in.size(); ++j) {
                      const float u = f.in[j]->f32()[off[j]];
                      if (std::isnan(v)) break;
                      v = std::isnan(u) ? u : (max ? (u > v ? u : v) : (u < v ? u : v));
                    }
                    y.f32()[k] = v;
                  });
  return y;
}

// The formula of graph/base/unary_ops.def, the same expression the kernels run.
float unary_value(OpKind op, float v, float a, float b) {
  (void)a;
  (void)b;
  switch (op) {
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_FOLD_##Row(Name, Expr)
#define FUSERT_UNARY_FOLD_0(Name, Expr)
#define FUSERT_UNARY_FOLD_1(Name, Expr) \
  case OpKind::k##Name:                 \
    return Expr;
#define FUSERT_UNARY_FOLD_2(Name, Expr)
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_FOLD_0
#undef FUSERT_UNARY_FOLD_1
#undef FUSERT_UNARY_FOLD_2
    default:
      return v;
  }
}

std::optional<Tensor> fold_unary(const FoldInput& f) {
  const Tensor& x = *f.in[0];
  if (x.dtype() != DType::kF32 || !is_table_unary(f.node.op)) return std::nullopt;
  float a = 0, b = 0;
  unary_params(f.node, &a, &b);
  Tensor y(DType::kF32, f.out_shape);
  const float* px = x.f32();
  float* py = y.f32();
  for (int64_t i = 0; i < x.numel(); ++i) py[i] = unary_value(f.node.op, px[i], a, b);
  return y;
}

std::optional<Tensor> fold(const FoldInput& f) {
  switch (f.node.op) {
    case OpKind::kReshape:
    case OpKind::kUnsqueeze:
    case OpKind::kFlatten:
    case OpKind::kIdentity:
      return f.in[0]->clone().reshaped(f.out_shape);  // row-major order is unchanged
    case OpKind::kTranspose:
      return fold_transpose(f);
    case OpKind::kSlice:
      return fold_slice(f);
    case OpKind::kConcat:
      return fold_concat(f);
    case OpKind::kGather:
      return fold_gather(f);
    case OpKind::kCast:
      return fold_cast(f);
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
      return fold_binary(f);
    case OpKind::kEqual:
    case OpKind::kLess:
    case OpKind::kGreater:
    case OpKind::kLessOrEqual:
    case OpKind::kGreaterOrEqual:
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
    case OpKind::kNot:
      return fold_compare(f);
    case OpKind::kWhere:
      return fold_where(f);
    case OpKind::kMax:
    case OpKind::kMin:
      return fold_extremum(f);
    case OpKind::kDequantizeLinear:  // the weights of a QDQ model
      return fold_dequantize(*f.in[0], *f.in[1], f.in.size() > 2 ? f.in[2] : nullptr, f.node.attr_i("axis"));
    default:
      return is_table_unary(f.node.op) ? fold_unary(f) : std::nullopt;
  }
}

// Keeps what refold_symbolic needs to evaluate `n` again at another shape.
void record_symbolic_fold(Graph& g, const Node& n) {
  SymbolicFold f{n, {}, {}, g.value(n.outputs[0]).name};
  for (ValueId in : n.inputs) {
    f.inputs.push_back(in == kNoValue ? std::string() : g.value(in).name);
    f.fixed.push_back(in == kNoValue || g.value(in).symbolic ? Tensor() : g.value(in).data);
  }
  g.symbolic_folds.push_back(std::move(f));
}

class ConstantFoldingPass : public Pass {
 public:
  const char* name() const override { return "constant_folding"; }

  Result<bool> run(Graph& g) override {
    clear_summary();
    std::vector<bool> folded(g.nodes.size(), false);
    std::vector<std::string> names;
    // One forward sweep folds whole chains: a folded output is bound data for later nodes.
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      const Node& n = g.nodes[i];
      std::optional<FoldInput> f = foldable(g, n);
      if (!f) continue;
      std::optional<Tensor> t = fold(*f);
      if (!t) continue;
      bool symbolic = false;
      for (ValueId in : n.inputs) symbolic = symbolic || (in != kNoValue && g.value(in).symbolic);
      if (symbolic) record_symbolic_fold(g, n);
      Value& v = g.value(n.outputs[0]);
      v.is_initializer = true;
      v.is_constant = true;
      v.symbolic = symbolic;
      v.data = std::move(*t);
      v.loc = n.loc;
      folded[i] = true;
      names.push_back(n.name);
    }
    if (names.empty()) return false;
    std::string list;
    for (size_t k = 0; k < names.size() && k < 8; ++k) list += (k ? ", " : "") + names[k];
    note("folded " + (names.size() > 1 ? std::to_string(names.size()) + " nodes: " : std::string()) + list +
         (names.size() > 8 ? ", ..." : ""));
    erase_nodes(g, folded);
    return true;
  }

  static std::optional<FoldInput> foldable(const Graph& g, const Node& n) {
    if (n.outputs.size() != 1) return std::nullopt;
    const Value& out = g.value(n.outputs[0]);
    if (out.is_graph_output || !out.shape_known || shape_numel(out.shape) > kMaxFoldElements) return std::nullopt;
    FoldInput f{n, {}, out.shape, out.dtype};
    for (ValueId in : n.inputs) {
      if (in == kNoValue) {
        f.in.push_back(nullptr);
        continue;
      }
      const Tensor* t = bound_data(g, in);  // graph inputs and unbound weights are not constant
      if (!t) return std::nullopt;
      f.in.push_back(t);
    }
    if (f.in.empty() || !f.in[0]) return std::nullopt;
    return f;
  }
};

}  // namespace

Status refold_symbolic(const Graph& folds, std::map<std::string, Tensor>* env) {
  for (const SymbolicFold& f : folds.symbolic_folds) {
    // A one-node graph over constant inputs infers the output's shape at this shape.
    Graph mini;
    Node n = f.node;
    n.inputs.clear();
    for (size_t k = 0; k < f.inputs.size(); ++k) {
      if (f.inputs[k].empty()) {
        n.inputs.push_back(kNoValue);
        continue;
      }
      Tensor data = f.fixed[k];
      if (data.empty()) {
        auto it = env->find(f.inputs[k]);
        if (it == env->end())
          return error(StatusCode::kInternal)
                 << "symbolic fold of node '" << n.name << "': no value for '" << f.inputs[k] << "'";
        data = it->second;
      }
      const ValueId id = mini.add_value(f.inputs[k]);
      Value& v = mini.value(id);
      v.dtype = data.dtype();
      v.shape = data.shape();
      v.shape_known = v.is_initializer = v.is_constant = true;
      v.data = data;
      n.inputs.push_back(id);
    }
    n.outputs = {mini.add_value(f.output)};
    mini.nodes.push_back(n);
    mini.outputs = n.outputs;
    mini.rebuild_links();
    FUSERT_RETURN_IF_ERROR(infer_shapes(mini));
    const Value& out = mini.value(mini.nodes[0].outputs[0]);
    FoldInput in{mini.nodes[0], {}, out.shape, out.dtype};
    for (ValueId id : mini.nodes[0].inputs) in.in.push_back(id == kNoValue ? nullptr : &mini.value(id).data);
    std::optional<Tensor> t = fold(in);
    if (!t) return error(StatusCode::kInternal) << "node '" << n.name << "' folded at load but not at this shape";
    (*env)[f.output] = std::move(*t);
  }
  return Status();
}

std::optional<Tensor> fold_constant_node(const Graph& g, const Node& n) {
  std::optional<FoldInput> f = ConstantFoldingPass::foldable(g, n);
  if (!f) return std::nullopt;
  return fold(*f);
}

std::unique_ptr<Pass> make_constant_folding_pass() { return std::make_unique<ConstantFoldingPass>(); }

}  // namespace fusert
