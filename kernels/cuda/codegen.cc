// CUDA C++ generators for fused groups (see codegen.h). Each generator writes a translation
// unit from the group's structure only: the ABI text, fixed device helpers, one inlined device
// function per program, and one entry. The entry name hashes the text, so equal structures give
// byte-identical sources and share one compiled kernel. Register values of an elementwise
// program become scalar locals `rK`; ops mirror kernels/cpu/fused_epilogue.cc exactly (NaN
// handling included), with libdevice's IEEE functions (expf, erff, tanhf), never intrinsics.
// Each generator also records the spec of the entry (kernel_spec.h) for the host references.
#include "kernels/cuda/codegen.h"

#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"

namespace fusert::cuda {
namespace {

using cpu::ElementwiseInstr;
using cpu::ElementwiseProgram;
using cpu::EpOp;

constexpr int kEwBlock = 256, kRowBlock = 256, kPoolBlock = 256, kAttnBlock = 128;
constexpr int kMaxRank = 6, kMaxInputs = 8, kMaxOutputs = 4, kMaxMembers = 4;
const char* const kEntryToken = "FZ_ENTRY_NAME";

// ---------------------------------------------------------------- text utilities
/// Exact C++ literal of a float: hex-float ("0x1.8p+2f" for 6), infinities and NaN by bits.
std::string hex_float(float v) {
  if (std::isnan(v)) return "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) return v > 0 ? "__int_as_float(0x7f800000)" : "(-__int_as_float(0x7f800000))";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%a", static_cast<double>(v));
  const std::string s = std::string(buf) + "f";
  return s[0] == '-' ? "(" + s + ")" : s;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Device helpers shared by every kernel. Comparisons are written so that NaN fails them and
// falls through to the value itself, as the CPU kernels do (Relu(NaN) and Clip(NaN) stay NaN).
std::string math_helpers() {
  std::ostringstream os;
  os << "#define FZ_NEG_INF (-__int_as_float(0x7f800000))\n"
     << "__device__ __forceinline__ float fz_relu(float v) { return v < 0.0f ? 0.0f : v; }\n"
     << "__device__ __forceinline__ float fz_clip(float v, float lo, float hi) {\n"
     << "  v = v < lo ? lo : v;\n  return v > hi ? hi : v;\n}\n"
     << "__device__ __forceinline__ float fz_sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }\n"
     << "__device__ __forceinline__ float fz_hard_swish(float v) {\n"
     << "  return v * fz_clip(v / 6.0f + 0.5f, 0.0f, 1.0f);\n}\n"
     << "__device__ __forceinline__ float fz_gelu(float v) {\n"
     << "  return 0.5f * v * (1.0f + erff(v * " << hex_float(0.70710678118654752f) << "));\n}\n"
     << "__device__ __forceinline__ float fz_gelu_tanh(float v) {\n"
     << "  return 0.5f * v * (1.0f + tanhf(" << hex_float(0.79788456080286536f) << " * (v + " << hex_float(0.044715f)
     << " * v * v * v)));\n}\n"
     << "__device__ __forceinline__ float fz_nan_max(float m, float v) { return (v > m || v != v) ? v : m; }\n";
  return os.str();
}

// Butterfly (xor) reductions: every lane, then every thread of the block, ends with the same
// bits, so a branch on the result is uniform. `red` is a __shared__ float[32].
const char* const kReduceHelpers = R"(__device__ __forceinline__ float fz_warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float fz_warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fz_nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <int BLOCK>
__device__ __forceinline__ float fz_block_sum(float v, float* red) {
  v = fz_warp_sum(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  return fz_warp_sum((threadIdx.x & 31) < BLOCK / 32 ? red[threadIdx.x & 31] : 0.0f);
}
__device__ __forceinline__ double fz_warp_sum_d(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <int BLOCK>
__device__ __forceinline__ double fz_block_sum_d(double v, double* red) {
  v = fz_warp_sum_d(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  return fz_warp_sum_d((threadIdx.x & 31) < BLOCK / 32 ? red[threadIdx.x & 31] : 0.0);
}
template <int BLOCK>
__device__ __forceinline__ float fz_block_max(float v, float* red) {
  v = fz_warp_max(v);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  return fz_warp_max((threadIdx.x & 31) < BLOCK / 32 ? red[threadIdx.x & 31] : FZ_NEG_INF);
}
)";

/// Completes a kernel: the entry name hashes `kind` and the body (with the entry token in
/// place of the name), then the ABI text is prepended.
KernelSource finish(const std::string& kind, const std::string& body, int block) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a(kind + "\n" + body)));
  KernelSource ks;
  ks.entry = "fz_" + kind + "_" + hex;
  ks.block = block;
  std::string text = body;
  for (size_t p = text.find(kEntryToken); p != std::string::npos; p = text.find(kEntryToken, p)) {
    text.replace(p, std::string(kEntryToken).size(), ks.entry);
  }
  ks.source = std::string(kernel_abi_source()) + "\n" + text;
  return ks;
}

// ---------------------------------------------------------------- programs
/// Expression of input k at the current element.
using InputRead = std::function<std::string(int)>;

/// Expression of one instruction over v (register) and t (operand expression, may be empty).
std::string op_expr(const ElementwiseInstr& ins, const std::string& v, const std::string& t) {
  const bool f = ins.operand_first;
  switch (ins.op) {
    case EpOp::kAddTensor:
      return f ? t + " + " + v : v + " + " + t;
    case EpOp::kSubTensor:
      return f ? t + " - " + v : v + " - " + t;
    case EpOp::kMulTensor:
      return f ? t + " * " + v : v + " * " + t;
    case EpOp::kDivTensor:
      return f ? t + " / " + v : v + " / " + t;
    case EpOp::kPowTensor:
      return f ? "powf(" + t + ", " + v + ")" : "powf(" + v + ", " + t + ")";
    case EpOp::kRelu:
      return "fz_relu(" + v + ")";
    case EpOp::kClip:
      return "fz_clip(" + v + ", " + hex_float(ins.a) + ", " + hex_float(ins.b) + ")";
    case EpOp::kSigmoid:
      return "fz_sigmoid(" + v + ")";
    case EpOp::kHardSigmoid:
      return "fz_clip(" + hex_float(ins.a) + " * " + v + " + " + hex_float(ins.b) + ", 0.0f, 1.0f)";
    case EpOp::kHardSwish:
      return "fz_hard_swish(" + v + ")";
    case EpOp::kGelu:
      return "fz_gelu(" + v + ")";
    case EpOp::kGeluTanh:
      return "fz_gelu_tanh(" + v + ")";
    case EpOp::kTanh:
      return "tanhf(" + v + ")";
    case EpOp::kErf:
      return "erff(" + v + ")";
    case EpOp::kSqrt:
      return "sqrtf(" + v + ")";
    case EpOp::kNeg:
      return "-" + v;
    case EpOp::kExp:
      return "expf(" + v + ")";
    case EpOp::kIdentity:
      return v;
  }
  return v;
}

bool is_tensor_op(EpOp op) {
  return op == EpOp::kAddTensor || op == EpOp::kSubTensor || op == EpOp::kMulTensor || op == EpOp::kDivTensor ||
         op == EpOp::kPowTensor;
}

std::string reg(int r) { return "r" + std::to_string(r); }

/// Appends the registers, loads and code of `prog`. Register 0 starts as `init0` (an implicit
/// load or a preset value; "" for none); `num_inputs` bounds input indices. Malformed programs
/// emit #error, so the compile fails naming the problem.
void emit_program(std::ostringstream& os, const ElementwiseProgram& prog, const InputRead& read,
                  const std::string& init0, int num_inputs, int result_reg) {
  std::set<int> used;
  for (const auto& [r, in] : prog.loads) used.insert(r);
  for (const ElementwiseInstr& ins : prog.code) {
    used.insert(ins.dst);
    used.insert(ins.src);
    if (ins.src2 >= 0) used.insert(ins.src2);
  }
  for (const auto& [r, out] : prog.stores) used.insert(r);
  if (result_reg >= 0) used.insert(result_reg);
  for (int r : used) {
    if (r < 0) {
      os << "#error \"fusert codegen: negative register\"\n";
      return;
    }
    os << "  float " << reg(r) << " = " << (r == 0 && !init0.empty() ? init0 : "0.0f") << ";\n";
  }
  auto input_ok = [&](int k) { return k >= 0 && k < num_inputs; };
  for (const auto& [r, in] : prog.loads) {
    if (!input_ok(in))
      os << "#error \"fusert codegen: load from a missing input\"\n";
    else
      os << "  " << reg(r) << " = " << read(in) << ";\n";
  }
  for (const ElementwiseInstr& ins : prog.code) {
    std::string t;
    if (ins.src2 >= 0) {
      t = reg(ins.src2);
    } else if (ins.input >= 0) {
      if (!input_ok(ins.input)) {
        os << "#error \"fusert codegen: operand from a missing input\"\n";
        continue;
      }
      t = read(ins.input);
    } else if (is_tensor_op(ins.op)) {
      os << "#error \"fusert codegen: tensor op without operand\"\n";
      continue;
    }
    os << "  " << reg(ins.dst) << " = " << op_expr(ins, reg(ins.src), t) << ";\n";
  }
}

bool implicit_load0(const ElementwiseProgram& prog, int num_inputs) {
  if (num_inputs == 0) return false;
  for (const auto& [r, in] : prog.loads) {
    if (r == 0) return false;
  }
  return true;
}

// ---------------------------------------------------------------- elementwise
enum class Access { kContiguous, kScalar, kStrided };

// Size-1 dims are ignored: their index is always 0, so their stride never matters.
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

/// Device function `fz_ew_body<m>(a, i)`: element i of one program. Shape and strides are
/// padded at the front to FZ_MAX_RANK in the args, so logical dim d is padded dim
/// FZ_MAX_RANK - rank + d; the rank is baked and the index decomposed only if some input
/// needs it.
void emit_ew_body(std::ostringstream& os, const ElementwiseProgram& prog, int member) {
  const int rank = static_cast<int>(prog.out_shape.size());
  const int inputs = static_cast<int>(prog.input_strides.size());
  os << "template <typename I>\n__device__ __forceinline__ void fz_ew_body" << member
     << "(const FzEwArgs& a, const I i) {\n";
  if (rank > kMaxRank || inputs > kMaxInputs) os << "#error \"fusert codegen: rank or input count too large\"\n";
  std::vector<Access> access;
  bool strided = false;
  for (int k = 0; k < inputs; ++k) {
    access.push_back(classify(prog.out_shape, prog.input_strides[static_cast<size_t>(k)]));
    strided = strided || access.back() == Access::kStrided;
  }
  const int first = kMaxRank - rank;
  if (strided && rank > 0) {
    os << "  I q = i;\n";
    for (int p = kMaxRank - 1; p > first; --p) {
      os << "  const I c" << p << " = q % (I)a.shape[" << p << "];\n  q /= (I)a.shape[" << p << "];\n";
    }
    os << "  const I c" << first << " = q;\n";
  }
  const InputRead read = [&](int k) {
    std::ostringstream e;
    e << "a.in[" << k << "][";
    if (access[static_cast<size_t>(k)] == Access::kContiguous) {
      e << "i";
    } else if (access[static_cast<size_t>(k)] == Access::kScalar || rank == 0) {
      e << "0";
    } else {
      for (int p = first; p < kMaxRank; ++p) {
        e << (p == first ? "" : " + ") << "c" << p << " * a.in_strides[" << k << "][" << p << "]";
      }
    }
    e << "]";
    return e.str();
  };
  emit_program(os, prog, read, implicit_load0(prog, inputs) ? read(0) : "", inputs, -1);
  for (const auto& [r, out] : prog.stores) {
    if (out < 0 || out >= kMaxOutputs)
      os << "#error \"fusert codegen: store to a missing output\"\n";
    else
      os << "  a.out[" << out << "][i] = " << reg(r) << ";\n";
  }
  os << "}\n";
}

/// The grid-stride loops of member m over args expression `args`. Index decomposition is a
/// chain of integer divisions per element, 32-bit ones are several times cheaper than 64-bit
/// ones, so outputs below 2^31 elements (nearly all) take an unsigned 32-bit loop.
std::string ew_loop(const std::string& args, int member, int block, const std::string& ind) {
  const std::string body = "fz_ew_body" + std::to_string(member);
  std::ostringstream os;
  os << ind << "if (" << args << ".numel <= 0x7fffffff) {\n"
     << ind << "  for (unsigned i = blockIdx.x * " << block << " + threadIdx.x; i < (unsigned)" << args
     << ".numel; i += gridDim.x * " << block << ") " << body << "<unsigned>(" << args << ", i);\n"
     << ind << "} else {\n"
     << ind << "  for (fz_i64 i = (fz_i64)blockIdx.x * " << block << " + threadIdx.x; i < " << args
     << ".numel; i += (fz_i64)gridDim.x * " << block << ") " << body << "<fz_i64>(" << args << ", i);\n"
     << ind << "}\n";
  return os.str();
}

}  // namespace

KernelSource gen_elementwise(const ElementwiseProgram& prog) {
  std::ostringstream os;
  os << math_helpers();
  emit_ew_body(os, prog, 0);
  os << "extern \"C\" __global__ void __launch_bounds__(" << kEwBlock << ") " << kEntryToken
     << "(const FzEwArgs args) {\n"
     << ew_loop("args", 0, kEwBlock, "  ") << "}\n";
  KernelSource ks = finish("ew", os.str(), kEwBlock);
  register_kernel_spec(ks.entry, prog);
  return ks;
}

// Members are selected by constant indices in a switch: a dynamic args.m[blockIdx.y] would
// copy the parameter array to local memory.
KernelSource gen_elementwise_multi(const std::vector<ElementwiseProgram>& progs) {
  std::ostringstream os;
  os << math_helpers();
  if (progs.empty() || progs.size() > static_cast<size_t>(kMaxMembers)) {
    os << "#error \"fusert codegen: 1 to FZ_MAX_MEMBERS member programs\"\n";
  }
  for (size_t m = 0; m < progs.size(); ++m) emit_ew_body(os, progs[m], static_cast<int>(m));
  os << "extern \"C\" __global__ void __launch_bounds__(" << kEwBlock << ") " << kEntryToken
     << "(const FzMultiEwArgs args) {\n  switch (blockIdx.y) {\n";
  for (size_t m = 0; m < progs.size() && m < static_cast<size_t>(kMaxMembers); ++m) {
    const std::string args = "args.m[" + std::to_string(m) + "]";
    os << "    case " << m << ":\n" << ew_loop(args, static_cast<int>(m), kEwBlock, "      ") << "      break;\n";
  }
  os << "  }\n}\n";
  KernelSource ks = finish("ewmulti", os.str(), kEwBlock);
  register_kernel_spec(ks.entry, progs);
  return ks;
}

namespace {

// ---------------------------------------------------------------- row-wise prologue/epilogue
/// The value a pre/post program produces: stores[0]'s register, else register 0.
int result_register(const ElementwiseProgram& prog) {
  return prog.code.empty() || prog.stores.empty() ? 0 : prog.stores.front().first;
}

/// `float <name>(const <Args>& a, <index params>[, const float v])`: the program at one
/// element; register 0 starts as v (post programs) or as input 0 (pre programs).
void emit_value_fn(std::ostringstream& os, const std::string& name, const std::string& args_type,
                   const std::string& params, const ElementwiseProgram& prog, const InputRead& read, bool preset) {
  os << "__device__ __forceinline__ float " << name << "(const " << args_type << "& a, " << params
     << (preset ? ", const float v" : "") << ") {\n";
  const int result = result_register(prog);
  const std::string init0 = preset ? "v" : implicit_load0(prog, kMaxInputs) ? read(0) : "";
  emit_program(os, prog, read, init0, kMaxInputs, result);
  os << "  return " << reg(result) << ";\n}\n";
}

std::string row_read(int k) {
  return "a.in[" + std::to_string(k) + "][row * a.in_strides[" + std::to_string(k) + "][0] + col * a.in_strides[" +
         std::to_string(k) + "][1]]";
}

// Two-pass statistics over the row held in shared memory, accumulated in double as the CPU
// kernel does (kernels/cpu/fused_norm.cc): the mean first, then the mean of squared deviations
// from it, so a row with a large common offset keeps its precision; then the float formula.
void emit_layer_norm(std::ostringstream& os, const RowNormSpec& spec) {
  const std::string loop = "  for (fz_i64 col = threadIdx.x; col < inner; col += " + std::to_string(kRowBlock) + ")";
  os << "  __shared__ double fz_red_d[32];\n"
     << "  double s = 0.0;\n"
     << loop << " s += (double)fz_row[col];\n"
     << "  const double mean_d = fz_block_sum_d<" << kRowBlock << ">(s, fz_red_d) / (double)inner;\n"
     << "  double q = 0.0;\n"
     << loop << " {\n    const double d = (double)fz_row[col] - mean_d;\n    q += d * d;\n  }\n"
     << "  const double var = fz_block_sum_d<" << kRowBlock << ">(q, fz_red_d) / (double)inner;\n"
     << "  const float mean = (float)mean_d;\n"
     << "  const float inv = (float)(1.0 / sqrt(var + (double)" << hex_float(spec.eps) << "));\n"
     << loop << " {\n    float y = (fz_row[col] - mean) * inv;\n";
  if (spec.scale_input >= 0) os << "    y = y * a.in[" << spec.scale_input << "][col];\n";
  if (spec.shift_input >= 0) os << "    y = y + a.in[" << spec.shift_input << "][col];\n";
  os << "    a.out[row * inner + col] = fz_post(a, row, col, y);\n  }\n";
}

// Max-subtracted softmax; the branch on the block-wide max is uniform (all threads hold the
// same reduced bits). A row of all -inf gives zeros (then the post program), never NaN.
void emit_softmax(std::ostringstream& os) {
  const std::string loop = "  for (fz_i64 col = threadIdx.x; col < inner; col += " + std::to_string(kRowBlock) + ")";
  os << "  float m = FZ_NEG_INF;\n"
     << loop << " m = fz_nan_max(m, fz_row[col]);\n"
     << "  m = fz_block_max<" << kRowBlock << ">(m, fz_red);\n"
     << "  if (m == FZ_NEG_INF) {\n"
     << "  " << loop << " a.out[row * inner + col] = fz_post(a, row, col, 0.0f);\n"
     << "    return;\n  }\n"
     << "  float s = 0.0f;\n"
     << loop << " {\n    const float e = expf(fz_row[col] - m);\n    fz_row[col] = e;\n    s += e;\n  }\n"
     << "  const float inv = 1.0f / fz_block_sum<" << kRowBlock << ">(s, fz_red);\n"
     << loop << " a.out[row * inner + col] = fz_post(a, row, col, fz_row[col] * inv);\n";
}

}  // namespace

// Each thread owns columns tid, tid + BLOCK, ...: it writes and later re-reads only its own
// shared-memory slots, so the only barriers needed are inside the block reductions.
KernelSource gen_row_norm(const RowNormSpec& spec) {
  const bool ln = spec.kind == cpu::RowNorm::kLayerNorm;
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  const std::string params = "const fz_i64 row, const fz_i64 col";
  emit_value_fn(os, "fz_pre", "FzRowArgs", params, spec.pre, row_read, false);
  emit_value_fn(os, "fz_post", "FzRowArgs", params, spec.post, row_read, true);
  if (spec.scale_input >= kMaxInputs || spec.shift_input >= kMaxInputs) {
    os << "#error \"fusert codegen: scale/shift input out of range\"\n";
  }
  os << "extern \"C\" __global__ void __launch_bounds__(" << kRowBlock << ") " << kEntryToken
     << "(const FzRowArgs a) {\n"
     << "  extern __shared__ float fz_row[];\n  __shared__ float fz_red[32];\n"
     << "  const fz_i64 row = blockIdx.x, inner = a.inner;\n"
     << "  for (fz_i64 col = threadIdx.x; col < inner; col += " << kRowBlock
     << ") fz_row[col] = fz_pre(a, row, col);\n";
  if (ln)
    emit_layer_norm(os, spec);
  else
    emit_softmax(os);
  os << "}\n";
  KernelSource ks = finish(ln ? "layernorm" : "softmax", os.str(), kRowBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

size_t row_norm_shared_bytes(int64_t inner) { return static_cast<size_t>(inner > 0 ? inner : 0) * sizeof(float); }

namespace {

// ---------------------------------------------------------------- pooling
std::string pool_read(int k, const char* y, const char* x) {
  const std::string s = "a.in_strides[" + std::to_string(k) + "]";
  return "a.in[" + std::to_string(k) + "][ni * " + s + "[0] + ci * " + s + "[1] + " + y + " * " + s + "[2] + " + x +
         " * " + s + "[3]]";
}

// Window taps at y0 + ky * dil (ky < kh); only taps inside the input are read. The average's
// count_include_pad divisor counts taps inside the padded extent [-pad_top, h + pad_bottom),
// the window ONNX clips to under ceil_mode (cpu::avg_pool2d's rule).
void emit_window_pool(std::ostringstream& os, const PoolSpec& s) {
  const bool max = s.kind == PoolSpec::kMax;
  os << "  const fz_i64 total = a.n * a.c * a.oh * a.ow;\n"
     << "  for (fz_i64 o = (fz_i64)blockIdx.x * " << kPoolBlock
     << " + threadIdx.x; o < total; o += (fz_i64)gridDim.x * " << kPoolBlock << ") {\n"
     << "    const fz_i64 ox = o % a.ow, t = o / a.ow, oy = t % a.oh, t2 = t / a.oh, ci = t2 % a.c, ni = t2 / a.c;\n"
     << "    const fz_i64 y0 = oy * " << s.stride_h << " - " << s.pad_top << ", x0 = ox * " << s.stride_w << " - "
     << s.pad_left << ";\n"
     << "    float acc = " << (max ? hex_float(-3.40282347e+38f) : "0.0f") << ";\n"
     << (max ? "" : "    int count = 0;\n") << "    for (int ky = 0; ky < " << s.kh << "; ++ky) {\n"
     << "      const fz_i64 iy = y0 + ky * " << s.dil_h << ";\n"
     << "      if (iy < 0 || iy >= a.h) continue;\n"
     << "      for (int kx = 0; kx < " << s.kw << "; ++kx) {\n"
     << "        const fz_i64 ix = x0 + kx * " << s.dil_w << ";\n"
     << "        if (ix < 0 || ix >= a.w) continue;\n"
     << "        const float v = fz_pre(a, ni, ci, iy, ix);\n"
     << (max ? "        acc = fz_nan_max(acc, v);\n" : "        acc += v;\n") << (max ? "" : "        ++count;\n")
     << "      }\n    }\n";
  if (!max && s.count_include_pad) {
    os << "    int py = 0, px = 0;\n"
       << "    for (int ky = 0; ky < " << s.kh << "; ++ky) {\n"
       << "      const fz_i64 iy = y0 + ky * " << s.dil_h << ";\n"
       << "      py += iy >= " << -s.pad_top << " && iy < a.h + " << s.pad_bottom << ";\n    }\n"
       << "    for (int kx = 0; kx < " << s.kw << "; ++kx) {\n"
       << "      const fz_i64 ix = x0 + kx * " << s.dil_w << ";\n"
       << "      px += ix >= " << -s.pad_left << " && ix < a.w + " << s.pad_right << ";\n    }\n"
       << "    count = py * px;\n";
  }
  if (!max) os << "    acc = count > 0 ? acc / (float)count : 0.0f;\n";
  os << "    a.out[o] = fz_post(a, ni, ci, oy, ox, acc);\n  }\n";
}

// One warp per (n, c) plane; lanes stride the plane, then a butterfly sum.
void emit_global_pool(std::ostringstream& os) {
  const int warps = kPoolBlock / 32;
  os << "  const fz_i64 planes = a.n * a.c, hw = a.h * a.w;\n"
     << "  const int lane = threadIdx.x & 31;\n"
     << "  for (fz_i64 p = (fz_i64)blockIdx.x * " << warps
     << " + (threadIdx.x >> 5); p < planes; p += (fz_i64)gridDim.x * " << warps << ") {\n"
     << "    const fz_i64 ni = p / a.c, ci = p % a.c;\n"
     << "    float s = 0.0f;\n"
     << "    for (fz_i64 e = lane; e < hw; e += 32) {\n"
     << "      const fz_i64 iy = e / a.w;\n"
     << "      s += fz_pre(a, ni, ci, iy, e - iy * a.w);\n    }\n"
     << "    s = fz_warp_sum(s);\n"
     << "    if (lane == 0) a.out[p] = fz_post(a, ni, ci, 0, 0, hw > 0 ? s / (float)hw : 0.0f);\n  }\n";
}

}  // namespace

KernelSource gen_pool(const PoolSpec& spec) {
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  emit_value_fn(
      os, "fz_pre", "FzPoolArgs", "const fz_i64 ni, const fz_i64 ci, const fz_i64 y, const fz_i64 x", spec.pre,
      [](int k) { return pool_read(k, "y", "x"); }, false);
  emit_value_fn(
      os, "fz_post", "FzPoolArgs", "const fz_i64 ni, const fz_i64 ci, const fz_i64 y, const fz_i64 x", spec.post,
      [](int k) { return pool_read(k, "y", "x"); }, true);
  os << "extern \"C\" __global__ void __launch_bounds__(" << kPoolBlock << ") " << kEntryToken
     << "(const FzPoolArgs a) {\n";
  if (spec.kind == PoolSpec::kGlobalAverage)
    emit_global_pool(os);
  else
    emit_window_pool(os, spec);
  os << "}\n";
  const char* kind = spec.kind == PoolSpec::kMax ? "maxpool" : spec.kind == PoolSpec::kAverage ? "avgpool" : "gavgpool";
  KernelSource ks = finish(kind, os.str(), kPoolBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

// ---------------------------------------------------------------- attention
// Block (i, h, b): the query row goes to shared memory; each warp takes keys j = warp, warp +
// WARPS, ... (lanes split the head's columns, coalesced); then the softmax over the scores in
// shared memory; then y = P V with thread t summing column t % D over keys j = t / D mod G
// (G = BLOCK / D groups), the G partials combined in a fixed order (deterministic).
KernelSource gen_attention(const AttentionSpec& spec) {
  const int64_t d = spec.head_dim > 0 ? spec.head_dim : 1;
  const int warps = kAttnBlock / 32;
  const int64_t groups = d <= kAttnBlock ? kAttnBlock / d : 1;
  const std::string block = std::to_string(kAttnBlock);
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  os << "extern \"C\" __global__ void __launch_bounds__(" << kAttnBlock << ") " << kEntryToken
     << "(const FzAttnArgs a) {\n"
     << "  const int D = " << d << ";\n"
     << "  extern __shared__ float fz_smem[];\n"
     << "  __shared__ float fz_red[32];\n"
     << (d <= kAttnBlock ? "  __shared__ float fz_part[" + std::to_string(groups * d) + "];\n" : "")
     << "  const fz_i64 S = a.seq, i = blockIdx.x, h = blockIdx.y, b = blockIdx.z;\n"
     << "  float* const p = fz_smem;\n  float* const qs = fz_smem + S;\n"
     << "  const float* const q = a.q + (b * S + i) * a.q_stride + a.q_col + h * D;\n"
     << "  for (int c = threadIdx.x; c < D; c += " << block << ") qs[c] = q[c];\n"
     << "  __syncthreads();\n"
     << "  const int lane = threadIdx.x & 31;\n"
     << "  const float* const kb = a.k + b * S * a.k_stride + a.k_col + h * D;\n";
  if (spec.has_mask) os << "  const float* const m = a.mask + b * a.mask_b_stride + i * a.mask_i_stride;\n";
  os << "  for (fz_i64 j = threadIdx.x >> 5; j < S; j += " << warps << ") {\n"
     << "    const float* const kr = kb + j * a.k_stride;\n"
     << "    float dot = 0.0f;\n"
     << "    for (int c = lane; c < D; c += 32) dot += qs[c] * kr[c];\n"
     << "    dot = fz_warp_sum(dot);\n"
     << "    if (lane == 0) p[j] = a.scale * dot" << (spec.has_mask ? " + m[j]" : "") << ";\n  }\n"
     << "  __syncthreads();\n"
     << "  float mx = FZ_NEG_INF;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") mx = fz_nan_max(mx, p[j]);\n"
     << "  mx = fz_block_max<" << kAttnBlock << ">(mx, fz_red);\n"
     << "  const bool empty = mx == FZ_NEG_INF;\n"
     << "  float s = 0.0f;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") {\n"
     << "    const float e = empty ? 0.0f : expf(p[j] - mx);\n    p[j] = e;\n    s += e;\n  }\n"
     << "  s = fz_block_sum<" << kAttnBlock << ">(s, fz_red);\n"
     << "  const float inv = empty ? 0.0f : 1.0f / s;\n"
     << "  for (fz_i64 j = threadIdx.x; j < S; j += " << block << ") p[j] *= inv;\n"
     << "  __syncthreads();\n"
     << "  const float* const vb = a.v + b * S * a.v_stride + a.v_col + h * D;\n"
     << "  float* const y = a.y + (b * S + i) * (a.heads * D) + h * D;\n";
  if (d <= kAttnBlock) {
    os << "  const int G = " << groups << ";\n"
       << "  if (threadIdx.x < G * D) {\n"
       << "    const int c = threadIdx.x % D;\n    float acc = 0.0f;\n"
       << "    for (fz_i64 j = threadIdx.x / D; j < S; j += G) acc += p[j] * vb[j * a.v_stride + c];\n"
       << "    fz_part[threadIdx.x] = acc;\n  }\n"
       << "  __syncthreads();\n"
       << "  if (threadIdx.x < D) {\n    float acc = fz_part[threadIdx.x];\n"
       << "    for (int g = 1; g < G; ++g) acc += fz_part[g * D + threadIdx.x];\n"
       << "    y[threadIdx.x] = acc;\n  }\n";
  } else {
    os << "  for (int c = threadIdx.x; c < D; c += " << block << ") {\n    float acc = 0.0f;\n"
       << "    for (fz_i64 j = 0; j < S; ++j) acc += p[j] * vb[j * a.v_stride + c];\n"
       << "    y[c] = acc;\n  }\n";
  }
  os << "}\n";
  KernelSource ks = finish("attention", os.str(), kAttnBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

size_t attention_shared_bytes(int64_t seq, int64_t head_dim) {
  return static_cast<size_t>((seq > 0 ? seq : 0) + (head_dim > 0 ? head_dim : 1)) * sizeof(float);
}

}  // namespace fusert::cuda
