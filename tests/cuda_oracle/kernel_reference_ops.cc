// Host references of the generated kernels (see kernel_reference_internal.h): an independent
// interpreter of each spec of codegen.h. Scalar ops are evaluated in float with the same
// expressions as the device helpers (NaN fails every comparison, so Relu/Clip/max keep NaN);
// reductions accumulate in double and round once, so a reference is at least as accurate as
// the kernel it stands for. Element order is serial; the kernels' results do not depend on it
// beyond rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

#include "graph/base/unary_math.h"
#include "kernels/cuda/kernel_abi.h"
#include "tests/cuda_oracle/kernel_reference_internal.h"

namespace fusert::cuda::detail {
namespace {

using kern::ElementwiseInstr;
using kern::ElementwiseProgram;
using kern::EpOp;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// ---------------------------------------------------------------- scalar ops
float nan_max(float m, float v) { return (v > m || v != v) ? v : m; }

/// One instruction on v (its source register) and t (its operand; unused by unary ops).
float apply(const ElementwiseInstr& ins, float v, float t) {
  const bool f = ins.operand_first;
  switch (ins.op) {
    case EpOp::kAddTensor:
      return f ? t + v : v + t;
    case EpOp::kSubTensor:
      return f ? t - v : v - t;
    case EpOp::kMulTensor:
      return f ? t * v : v * t;
    case EpOp::kDivTensor:
      return f ? t / v : v / t;
    case EpOp::kPowTensor:
      return f ? std::pow(t, v) : std::pow(v, t);
      // Every row of graph/base/unary_ops.def: the table's expression of v, a, b.
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) \
  case EpOp::k##Name: {                                         \
    const float a = ins.a, b = ins.b;                           \
    (void)a;                                                    \
    (void)b;                                                    \
    return Expr;                                                \
  }
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
  }
  return v;
}

// ---------------------------------------------------------------- programs
/// How register 0 starts before the loads: zero, input 0 at the element (the implicit load),
/// or the value handed to a post program.
enum class Init { kZero, kInput0, kPreset };

/// A program as the generated device code holds it: every register the program names is a
/// zeroed local, register 0 starts per `init`, then the loads, then the code in order.
struct Program {
  std::vector<std::pair<int, int>> loads;
  std::vector<ElementwiseInstr> code;
  Init init = Init::kZero;
  int registers = 0;  ///< highest register named + 1
  bool uses_r0 = false;
  std::string error;  ///< the generator's #error text, if it rejects the program
};

bool implicit_load0(const ElementwiseProgram& prog, int num_inputs) {
  if (num_inputs == 0) return false;
  return std::none_of(prog.loads.begin(), prog.loads.end(), [](const auto& l) { return l.first == 0; });
}

/// The value a row/pool pre or post program returns: stores[0]'s register, else register 0.
int result_register(const ElementwiseProgram& prog) {
  return prog.code.empty() || prog.stores.empty() ? 0 : prog.stores.front().first;
}

/// `num_inputs` bounds the input indices; `result` (-1 none) is named too, as in emit_program.
Program make_program(const ElementwiseProgram& prog, int num_inputs, Init init, int result) {
  Program p;
  p.loads = prog.loads;
  p.code = prog.code;
  p.init = init;
  std::set<int> used;
  for (const auto& [r, in] : prog.loads) used.insert(r);
  for (const ElementwiseInstr& ins : prog.code) {
    used.insert(ins.dst);
    used.insert(ins.src);
    if (ins.src2 >= 0) used.insert(ins.src2);
  }
  for (const auto& [r, out] : prog.stores) used.insert(r);
  if (result >= 0) used.insert(result);
  if (!used.empty() && *used.begin() < 0) {
    p.error = "fusert codegen: negative register";
    return p;
  }
  p.registers = used.empty() ? 0 : *used.rbegin() + 1;
  p.uses_r0 = used.count(0) != 0;
  auto input_ok = [&](int k) { return k >= 0 && k < num_inputs; };
  for (const auto& [r, in] : prog.loads) {
    if (p.error.empty() && !input_ok(in)) p.error = "fusert codegen: load from a missing input";
  }
  for (const ElementwiseInstr& ins : prog.code) {
    if (!p.error.empty() || ins.src2 >= 0) continue;
    if (ins.input >= 0 && !input_ok(ins.input)) p.error = "fusert codegen: operand from a missing input";
    if (ins.input < 0 && is_tensor_op(ins.op)) p.error = "fusert codegen: tensor op without operand";
  }
  return p;
}

/// Runs `p` at one element into r[0, p.registers); read(k) is input k's value there.
template <class Read>
void run_program(const Program& p, const Read& read, float preset, float* r) {
  std::fill(r, r + p.registers, 0.0f);
  if (p.uses_r0 && p.init == Init::kInput0) r[0] = read(0);
  if (p.uses_r0 && p.init == Init::kPreset) r[0] = preset;
  for (const auto& [reg, in] : p.loads) r[reg] = read(in);
  for (const ElementwiseInstr& ins : p.code) {
    float t = 0.0f;
    if (ins.src2 >= 0)
      t = r[ins.src2];
    else if (ins.input >= 0 && is_tensor_op(ins.op))
      t = read(ins.input);
    r[ins.dst] = apply(ins, r[ins.src], t);
  }
}

/// A pre/post value function of the row and pool kernels (inputs bounded by FZ_MAX_INPUTS).
struct ValueFn {
  Program prog;
  int result = 0;
  ValueFn(const ElementwiseProgram& p, bool preset) : result(result_register(p)) {
    const Init init = preset ? Init::kPreset : implicit_load0(p, FZ_MAX_INPUTS) ? Init::kInput0 : Init::kZero;
    prog = make_program(p, FZ_MAX_INPUTS, init, result);
  }
};

/// A ValueFn with its register scratch, one per launch: references stay reentrant (equal
/// kernels of concurrent sessions share one registered reference).
class ValueEval {
 public:
  explicit ValueEval(const ValueFn& fn) : fn_(fn), regs_(static_cast<size_t>(fn.prog.registers)) {}
  template <class Read>
  float operator()(const Read& read, float preset = 0.0f) {
    run_program(fn_.prog, read, preset, regs_.data());
    return regs_[static_cast<size_t>(fn_.result)];
  }

 private:
  const ValueFn& fn_;
  std::vector<float> regs_;
};

[[noreturn]] void fail(const std::string& what) { throw std::logic_error(what); }

// ---------------------------------------------------------------- elementwise
enum class Access { kContiguous, kScalar, kStrided };

// As the generator classifies an input (size-1 dims ignored); this is baked into the source.
Access classify(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  if (strides.size() != shape.size()) return Access::kStrided;
  bool contiguous = true, scalar = true;
  int64_t expect = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1) {
      contiguous = contiguous && strides[d] == expect;
      scalar = scalar && strides[d] == 0;
    }
    expect *= shape[d];
  }
  return contiguous ? Access::kContiguous : scalar ? Access::kScalar : Access::kStrided;
}

/// One elementwise program: what its fz_ew_body bakes (rank, access per input, program, stores).
struct EwMember {
  Program prog;
  int rank = 0;
  std::vector<Access> access;
  bool strided = false;
  std::vector<std::pair<int, int>> stores;
  std::string error;
};

EwMember make_ew_member(const ElementwiseProgram& prog) {
  EwMember m;
  m.rank = static_cast<int>(prog.out_shape.size());
  const int inputs = static_cast<int>(prog.input_strides.size());
  if (m.rank > FZ_MAX_RANK || inputs > FZ_MAX_INPUTS) m.error = "fusert codegen: rank or input count too large";
  for (const auto& strides : prog.input_strides) {
    m.access.push_back(classify(prog.out_shape, strides));
    m.strided = m.strided || m.access.back() == Access::kStrided;
  }
  m.prog = make_program(prog, inputs, implicit_load0(prog, inputs) ? Init::kInput0 : Init::kZero, -1);
  m.stores = prog.stores;
  for (const auto& [r, out] : prog.stores) {
    if (out < 0 || out >= FZ_MAX_OUTPUTS) m.error = "fusert codegen: store to a missing output";
  }
  if (m.error.empty()) m.error = m.prog.error;
  return m;
}

// Element i of [0, numel): the index is decomposed over the padded shape (logical dim d is
// padded dim FZ_MAX_RANK - rank + d; the outermost takes the whole quotient) only when some
// input is strided; contiguous inputs read [i], scalar ones [0].
void run_ew_member(const EwMember& m, const FzEwArgs& a) {
  if (!m.error.empty()) fail(m.error);
  const int first = FZ_MAX_RANK - m.rank;
  std::vector<float> regs(static_cast<size_t>(m.prog.registers));
  int64_t c[FZ_MAX_RANK] = {};
  for (int64_t i = 0; i < a.numel; ++i) {
    if (m.strided && m.rank > 0) {
      int64_t q = i;
      for (int p = FZ_MAX_RANK - 1; p > first; --p) {
        c[p] = q % a.shape[p];
        q /= a.shape[p];
      }
      c[first] = q;
    }
    auto read = [&](int k) {
      const Access access = m.access[static_cast<size_t>(k)];
      if (access == Access::kContiguous) return a.in[k][i];
      if (access == Access::kScalar || m.rank == 0) return a.in[k][0];
      int64_t offset = 0;
      for (int p = first; p < FZ_MAX_RANK; ++p) offset += c[p] * a.in_strides[k][p];
      return a.in[k][offset];
    };
    run_program(m.prog, read, 0.0f, regs.data());
    for (const auto& [r, out] : m.stores) a.out[out][i] = regs[static_cast<size_t>(r)];
  }
}

// ---------------------------------------------------------------- row norm
struct RowState {
  RowNormSpec spec;
  ValueFn pre, post;
  std::string error;
  explicit RowState(const RowNormSpec& s) : spec(s), pre(s.pre, false), post(s.post, true) {
    if (s.scale_input >= FZ_MAX_INPUTS || s.shift_input >= FZ_MAX_INPUTS)
      error = "fusert codegen: scale/shift input out of range";
    if (error.empty()) error = pre.prog.error;
    if (error.empty()) error = post.prog.error;
  }
};

// Row r of the block grid (the kernel never reads a.outer: grid_x is the row count).
void run_row(const RowState& s, const FzRowArgs& a, int64_t row, std::vector<float>& x) {
  const int64_t inner = a.inner;
  if (inner <= 0) return;
  ValueEval pre(s.pre), post(s.post);
  auto at = [&](int64_t col) {
    return [&a, row, col](int k) { return a.in[k][row * a.in_strides[k][0] + col * a.in_strides[k][1]]; };
  };
  x.resize(static_cast<size_t>(inner));
  for (int64_t col = 0; col < inner; ++col) x[static_cast<size_t>(col)] = pre(at(col));
  float* const out = a.out + row * inner;
  if (s.spec.kind == kern::RowNorm::kLayerNorm) {
    double sum = 0.0;
    for (float v : x) sum += v;
    const double mean_d = sum / static_cast<double>(inner);
    double sq = 0.0;
    for (float v : x) sq += (v - mean_d) * (v - mean_d);
    const float mean = static_cast<float>(mean_d), var = static_cast<float>(sq / static_cast<double>(inner));
    const float inv = 1.0f / std::sqrt(var + s.spec.eps);
    for (int64_t col = 0; col < inner; ++col) {
      float y = (x[static_cast<size_t>(col)] - mean) * inv;
      if (s.spec.scale_input >= 0) y = y * a.in[s.spec.scale_input][col];
      if (s.spec.shift_input >= 0) y = y + a.in[s.spec.shift_input][col];
      out[col] = post(at(col), y);
    }
    return;
  }
  float m = kNegInf;
  for (float v : x) m = nan_max(m, v);
  if (m == kNegInf) {  // all -inf: zeros, then the post program
    for (int64_t col = 0; col < inner; ++col) out[col] = post(at(col), 0.0f);
    return;
  }
  double sum = 0.0;
  for (float& v : x) {
    v = std::exp(v - m);
    sum += v;
  }
  const float inv = 1.0f / static_cast<float>(sum);
  for (int64_t col = 0; col < inner; ++col) out[col] = post(at(col), x[static_cast<size_t>(col)] * inv);
}

// ---------------------------------------------------------------- pooling
struct PoolState {
  PoolSpec spec;
  ValueFn pre, post;
  std::string error;
  explicit PoolState(const PoolSpec& s) : spec(s), pre(s.pre, false), post(s.post, true) {
    error = pre.prog.error.empty() ? post.prog.error : pre.prog.error;
  }
};

auto pool_at(const FzPoolArgs& a, int64_t ni, int64_t ci, int64_t y, int64_t x) {
  return [&a, ni, ci, y, x](int k) {
    const fz_i64* s = a.in_strides[k];
    return a.in[k][ni * s[0] + ci * s[1] + y * s[2] + x * s[3]];
  };
}

// Output o of [n, c, oh, ow]: taps y0 + ky * dil inside the input enter the max (NaN wins) or
// the sum; the average's count_include_pad divisor counts taps in [-pad, len + pad_far).
void run_window_pool(const PoolState& st, const FzPoolArgs& a) {
  const PoolSpec& s = st.spec;
  ValueEval pre(st.pre), post(st.post);
  const bool max = s.kind == PoolSpec::kMax;
  const int64_t total = a.n * a.c * a.oh * a.ow;
  for (int64_t o = 0; o < total; ++o) {
    const int64_t ox = o % a.ow, t = o / a.ow, oy = t % a.oh, t2 = t / a.oh, ci = t2 % a.c, ni = t2 / a.c;
    const int64_t y0 = oy * s.stride_h - s.pad_top, x0 = ox * s.stride_w - s.pad_left;
    float acc = max ? std::numeric_limits<float>::lowest() : 0.0f;
    int64_t count = 0;
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      const int64_t iy = y0 + ky * s.dil_h;
      if (iy < 0 || iy >= a.h) continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = x0 + kx * s.dil_w;
        if (ix < 0 || ix >= a.w) continue;
        const float v = pre(pool_at(a, ni, ci, iy, ix));
        acc = max ? nan_max(acc, v) : acc + v;
        ++count;
      }
    }
    if (!max && s.count_include_pad) {
      int64_t py = 0, px = 0;
      for (int64_t ky = 0; ky < s.kh; ++ky) {
        const int64_t iy = y0 + ky * s.dil_h;
        py += iy >= -s.pad_top && iy < a.h + s.pad_bottom;
      }
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        const int64_t ix = x0 + kx * s.dil_w;
        px += ix >= -s.pad_left && ix < a.w + s.pad_right;
      }
      count = py * px;
    }
    if (!max) acc = count > 0 ? acc / static_cast<float>(count) : 0.0f;
    a.out[o] = post(pool_at(a, ni, ci, oy, ox), acc);
  }
}

// Plane p = (ni, ci): the mean of pre over h * w, then post at (ni, ci, 0, 0).
void run_global_pool(const PoolState& st, const FzPoolArgs& a) {
  ValueEval pre(st.pre), post(st.post);
  const int64_t planes = a.n * a.c, hw = a.h * a.w;
  for (int64_t p = 0; p < planes; ++p) {
    const int64_t ni = p / a.c, ci = p % a.c;
    double sum = 0.0;
    for (int64_t e = 0; e < hw; ++e) sum += pre(pool_at(a, ni, ci, e / a.w, e % a.w));
    const float mean = hw > 0 ? static_cast<float>(sum) / static_cast<float>(hw) : 0.0f;
    a.out[p] = post(pool_at(a, ni, ci, 0, 0), mean);
  }
}

// ---------------------------------------------------------------- attention
// Block (i, h, b): p_j = scale * q_i . k_j (+ mask), softmax over j (all -inf: zeros), y = P V.
void run_attention_row(const AttentionSpec& spec, const FzAttnArgs& a, int64_t b, int64_t h, int64_t i,
                       std::vector<float>& p) {
  const int64_t d = spec.head_dim > 0 ? spec.head_dim : 1, s = a.seq;
  const float* const q = a.q + (b * s + i) * a.q_stride + a.q_col + h * d;
  const float* const kb = a.k + b * s * a.k_stride + a.k_col + h * d;
  const float* const vb = a.v + b * s * a.v_stride + a.v_col + h * d;
  p.resize(static_cast<size_t>(std::max<int64_t>(s, 0)));
  float mx = kNegInf;
  for (int64_t j = 0; j < s; ++j) {
    double dot = 0.0;
    for (int64_t c = 0; c < d; ++c) dot += static_cast<double>(q[c]) * kb[j * a.k_stride + c];
    float v = a.scale * static_cast<float>(dot);
    if (spec.has_mask) v = v + a.mask[b * a.mask_b_stride + i * a.mask_i_stride + j];
    p[static_cast<size_t>(j)] = v;
    mx = nan_max(mx, v);
  }
  const bool empty = mx == kNegInf;
  double sum = 0.0;
  for (float& v : p) {
    v = empty ? 0.0f : std::exp(v - mx);
    sum += v;
  }
  const float inv = empty ? 0.0f : 1.0f / static_cast<float>(sum);
  for (float& v : p) v *= inv;
  float* const y = a.y + (b * s + i) * (a.heads * d) + h * d;
  for (int64_t c = 0; c < d; ++c) {
    double acc = 0.0;
    for (int64_t j = 0; j < s; ++j) acc += static_cast<double>(p[static_cast<size_t>(j)]) * vb[j * a.v_stride + c];
    y[c] = static_cast<float>(acc);
  }
}

}  // namespace

// ---------------------------------------------------------------- builders
// Immutable state behind a shared_ptr, so copies of the std::function stay cheap; scratch is
// allocated per launch, so a reference may run on several threads at once.

KernelReference elementwise_reference(const ElementwiseProgram& prog) {
  auto m = std::make_shared<const EwMember>(make_ew_member(prog));
  return
      [m](const void* args, unsigned, unsigned, unsigned) { run_ew_member(*m, *static_cast<const FzEwArgs*>(args)); };
}

// blockIdx.y selects the member: members at or past grid_y are not run, as on the device.
KernelReference elementwise_multi_reference(const std::vector<ElementwiseProgram>& progs) {
  auto members = std::make_shared<std::vector<EwMember>>();
  std::string error;
  if (progs.empty() || progs.size() > static_cast<size_t>(FZ_MAX_MEMBERS)) {
    error = "fusert codegen: 1 to FZ_MAX_MEMBERS member programs";
  }
  for (const ElementwiseProgram& p : progs) members->push_back(make_ew_member(p));
  return [members, error](const void* args, unsigned, unsigned grid_y, unsigned) {
    if (!error.empty()) fail(error);
    const auto& a = *static_cast<const FzMultiEwArgs*>(args);
    const size_t n = std::min<size_t>({members->size(), static_cast<size_t>(FZ_MAX_MEMBERS), grid_y});
    for (size_t m = 0; m < n; ++m) run_ew_member((*members)[m], a.m[m]);
  };
}

// One row per block: rows [0, grid_x), which must not exceed a.outer (the device would write
// past the output).
KernelReference row_norm_reference(const RowNormSpec& spec) {
  auto st = std::make_shared<const RowState>(spec);
  return [st](const void* args, unsigned grid_x, unsigned, unsigned) {
    if (!st->error.empty()) fail(st->error);
    const auto& a = *static_cast<const FzRowArgs*>(args);
    if (static_cast<int64_t>(grid_x) > a.outer) {
      throw std::out_of_range("row-norm launch of " + std::to_string(grid_x) + " blocks over " +
                              std::to_string(a.outer) + " rows");
    }
    std::vector<float> x;
    for (int64_t row = 0; row < static_cast<int64_t>(grid_x); ++row) run_row(*st, a, row, x);
  };
}

// Grid-stride kernels: every output regardless of the grid.
KernelReference pool_reference(const PoolSpec& spec) {
  auto st = std::make_shared<const PoolState>(spec);
  return [st](const void* args, unsigned, unsigned, unsigned) {
    if (!st->error.empty()) fail(st->error);
    const auto& a = *static_cast<const FzPoolArgs*>(args);
    if (st->spec.kind == PoolSpec::kGlobalAverage)
      run_global_pool(*st, a);
    else
      run_window_pool(*st, a);
  };
}

// Block (i, h, b) for the grid (seq, heads, batch) as launched; a grid past the args' extents
// would read and write out of bounds on the device.
KernelReference attention_reference(const AttentionSpec& spec) {
  return [spec](const void* args, unsigned gx, unsigned gy, unsigned gz) {
    const auto& a = *static_cast<const FzAttnArgs*>(args);
    if (static_cast<int64_t>(gx) > a.seq || static_cast<int64_t>(gy) > a.heads || static_cast<int64_t>(gz) > a.batch) {
      throw std::out_of_range("attention launch grid (" + std::to_string(gx) + ", " + std::to_string(gy) + ", " +
                              std::to_string(gz) + ") exceeds (seq, heads, batch)");
    }
    std::vector<float> p;
    for (int64_t b = 0; b < static_cast<int64_t>(gz); ++b) {
      for (int64_t h = 0; h < static_cast<int64_t>(gy); ++h) {
        for (int64_t i = 0; i < static_cast<int64_t>(gx); ++i) run_attention_row(spec, a, b, h, i, p);
      }
    }
  };
}

}  // namespace fusert::cuda::detail
