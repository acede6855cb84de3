// Shared pieces of the CUDA generators (codegen_internal.h): text utilities, device helpers,
// and the emitter of elementwise programs that every kernel family inlines.
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <sstream>

#include "graph/base/unary_math.h"
#include "kernels/cuda/codegen_internal.h"
#include "kernels/cuda/kernel_abi.h"

namespace fusert::cuda::detail {

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
     << unary_math_cuda_source()  // fz_relu, fz_clip and fz_op_<Name> per row of unary_ops.def
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
      // Every row of graph/base/unary_ops.def: its device function, parameters as exact literals.
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) \
  case EpOp::k##Name:                                           \
    return "fz_op_" #Name "(" + v + ", " + hex_float(ins.a) + ", " + hex_float(ins.b) + ")";
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
  }
  return v;
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

}  // namespace fusert::cuda::detail
