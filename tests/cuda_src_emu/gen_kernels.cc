// Source emulation of the generated CUDA kernels, part 1: the kernels and their host patching.
//
// This file has two roles:
//  * the kernel specs the source-emulation test launches (functions in namespace
//    fusert_src_emu, also compiled into test_kernel_source, which calls them to register the
//    host references and to build matching argument structs);
//  * with FUSERT_SRC_EMU_GENERATOR defined, a program that generates every kernel the test
//    launches and writes `generated_kernels.inc`: each kernel's CUDA C++ source, patched just
//    enough to compile as host C++ against tests/cuda_src_emu/shim.h, in its own namespace,
//    plus a table {entry, host function}.
//
// The patching is textual and minimal: the ABI prelude is dropped (the host includes the same
// text through kernel_abi.h), `extern "C" __global__ void __launch_bounds__(N)` becomes `void`,
// `__device__ __forceinline__` becomes `inline`, `extern __shared__ float X[];` becomes a pointer
// to the emulated dynamic shared memory and `__shared__` becomes `static` (blocks run one at a
// time, so a function-static array is exactly one block's shared memory). Everything else —
// indexing, loops, reductions, barriers, shuffles — is the generated text as NVRTC sees it.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"

namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using kern::EpOp;
using Shape = std::vector<int64_t>;

namespace fusert_src_emu {
namespace {

kern::ElementwiseInstr op(EpOp o, int dst, int src, int input = -1, int src2 = -1, bool operand_first = false,
                          float a = 0.f, float b = 0.f) {
  kern::ElementwiseInstr i;
  i.op = o, i.dst = dst, i.src = src, i.input = input, i.src2 = src2, i.operand_first = operand_first;
  i.a = a, i.b = b;
  return i;
}

std::vector<int64_t> contiguous(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

}  // namespace

// ---------------------------------------------------------------- elementwise
// Rank-4 output shapes [n, c, h, w] of the elementwise cases. The elementwise source depends on
// which inputs are contiguous / scalar / strided, which size-1 dims can change, so every shape
// gets its own (deduplicated) kernel.
std::vector<Shape> ew_shapes() { return {{1, 1, 1, 1}, {1, 3, 13, 1}, {2, 3, 5, 13}, {1, 37, 3, 7}}; }

// Inputs: 0 x contiguous; 1 a scalar; 2 per channel (strides {0, 1, 0, 0}); 3 a transposed view
// of a [w, h, c, n] buffer. Four registers, three outputs.
kern::ElementwiseProgram ew_mixed_program(const Shape& s) {
  kern::ElementwiseProgram p;
  p.out_shape = s;
  p.input_strides = {contiguous(s), {0, 0, 0, 0}, {0, 1, 0, 0}, {1, s[0], s[0] * s[1], s[0] * s[1] * s[2]}};
  p.loads = {{1, 3}};
  p.code = {op(EpOp::kMulTensor, 0, 0, 1),     op(EpOp::kSubTensor, 0, 0, 2, -1, true),
            op(EpOp::kAddTensor, 2, 0, -1, 1), op(EpOp::kGelu, 0, 2),
            op(EpOp::kSigmoid, 1, 1),          op(EpOp::kDivTensor, 3, 1, 2)};
  p.stores = {{0, 0}, {3, 1}, {2, 2}};
  p.num_registers = 4;
  return p;
}

// Every op of the elementwise language over eight registers; input 1 per channel.
kern::ElementwiseProgram ew_ops_program(const Shape& s) {
  kern::ElementwiseProgram p;
  p.out_shape = s;
  p.input_strides = {contiguous(s), {0, 1, 0, 0}};
  p.code = {op(EpOp::kHardSigmoid, 1, 0, -1, -1, false, 0.2f, 0.5f),
            op(EpOp::kHardSwish, 2, 0),
            op(EpOp::kClip, 3, 0, -1, -1, false, -1.f, 2.f),
            op(EpOp::kGeluTanh, 4, 0),
            op(EpOp::kTanh, 5, 0),
            op(EpOp::kErf, 6, 0),
            op(EpOp::kExp, 7, 0),
            op(EpOp::kAddTensor, 1, 1, -1, 2),
            op(EpOp::kMulTensor, 1, 1, -1, 3),
            op(EpOp::kSubTensor, 4, 4, -1, 5, true),
            op(EpOp::kDivTensor, 6, 6, -1, 7),
            op(EpOp::kRelu, 0, 0),
            op(EpOp::kSqrt, 0, 0),
            op(EpOp::kPowTensor, 0, 0, 1),
            op(EpOp::kNeg, 4, 4),
            op(EpOp::kAddTensor, 1, 1, -1, 4),
            op(EpOp::kAddTensor, 1, 1, -1, 6),
            op(EpOp::kDivTensor, 0, 0, 1, -1, true),
            op(EpOp::kIdentity, 2, 2)};
  p.stores = {{0, 0}, {1, 1}};
  p.num_registers = 8;
  return p;
}

// Three members: Relu over the flat [numel]; a per-column bias + Relu over [n*c*h, w]; GeluTanh
// times a scalar over [n, c, h, w].
std::vector<kern::ElementwiseProgram> ew_multi_programs(const Shape& s) {
  const int64_t numel = s[0] * s[1] * s[2] * s[3];
  kern::ElementwiseProgram relu, bias, gelu;
  relu.out_shape = {numel}, relu.input_strides = {{1}}, relu.code = {op(EpOp::kRelu, 0, 0)};
  bias.out_shape = {numel / s[3], s[3]}, bias.input_strides = {{s[3], 1}, {0, 1}};
  bias.code = {op(EpOp::kAddTensor, 0, 0, 1), op(EpOp::kRelu, 0, 0)};
  gelu.out_shape = s, gelu.input_strides = {contiguous(s), {0, 0, 0, 0}};
  gelu.code = {op(EpOp::kGeluTanh, 0, 0), op(EpOp::kMulTensor, 0, 0, 1)};
  for (auto* p : {&relu, &bias, &gelu}) p->stores = {{0, 0}}, p->num_registers = 1;
  return {relu, bias, gelu};
}

// ---------------------------------------------------------------- row norms
// LayerNorm: pre x + residual (input 1); scale input 2, shift input 3; post * scalar input 4,
// Relu.
cu::RowNormSpec layer_norm_spec() {
  cu::RowNormSpec s;
  s.kind = kern::RowNorm::kLayerNorm;
  s.eps = 1e-5f;
  s.pre.code = {op(EpOp::kAddTensor, 0, 0, 1)};
  s.pre.stores = {{0, 0}};
  s.scale_input = 2, s.shift_input = 3;
  s.post.code = {op(EpOp::kMulTensor, 0, 0, 4), op(EpOp::kRelu, 0, 0)};
  s.post.stores = {{0, 0}};
  return s;
}

// Softmax: pre x * scale (scalar input 1) + mask (input 2, loaded into register 1); no post.
cu::RowNormSpec softmax_spec() {
  cu::RowNormSpec s;
  s.kind = kern::RowNorm::kSoftmax;
  s.pre.num_registers = 2;
  s.pre.loads = {{1, 2}};
  s.pre.code = {op(EpOp::kMulTensor, 0, 0, 1), op(EpOp::kAddTensor, 0, 0, -1, 1)};
  s.pre.stores = {{0, 0}};
  return s;
}

std::vector<int64_t> row_inners() { return {1, 3, 37, 300}; }

// ---------------------------------------------------------------- pooling
// Max 3x3 s2 p1; average 3x2 s2 with asymmetric pads and count_include_pad; global average.
// All fused: pre x * input 1 (per channel) + input 2 (full [n, c, h, w]); post + input 1, Relu.
std::vector<cu::PoolSpec> pool_specs() {
  std::vector<cu::PoolSpec> v(3);
  v[0].kind = cu::PoolSpec::kMax;
  v[0].kh = v[0].kw = 3, v[0].stride_h = v[0].stride_w = 2;
  v[0].pad_top = v[0].pad_left = v[0].pad_bottom = v[0].pad_right = 1;
  v[1].kind = cu::PoolSpec::kAverage;
  v[1].kh = 3, v[1].kw = 2, v[1].stride_h = v[1].stride_w = 2;
  v[1].pad_top = 1, v[1].pad_left = 0, v[1].pad_bottom = 1, v[1].pad_right = 1;
  v[1].count_include_pad = true;
  v[2].kind = cu::PoolSpec::kGlobalAverage;
  for (auto& s : v) {
    s.pre.code = {op(EpOp::kMulTensor, 0, 0, 1), op(EpOp::kAddTensor, 0, 0, 2)};
    s.pre.stores = {{0, 0}};
    s.post.code = {op(EpOp::kAddTensor, 0, 0, 1), op(EpOp::kRelu, 0, 0)};
    s.post.stores = {{0, 0}};
  }
  return v;
}

// ---------------------------------------------------------------- attention
// head_dim 64 without and with mask, 8 with mask (16 column groups), 160 (> block: the
// per-column loop).
std::vector<cu::AttentionSpec> attention_specs() {
  std::vector<cu::AttentionSpec> v(4);
  v[0].head_dim = 64, v[0].has_mask = false;
  v[1].head_dim = 64, v[1].has_mask = true;
  v[2].head_dim = 8, v[2].has_mask = true;
  v[3].head_dim = 160, v[3].has_mask = false;
  return v;
}

std::vector<int64_t> attention_seqs() { return {1, 5, 13}; }

// Every kernel the test launches (generating them also registers their host references).
std::vector<cu::KernelSource> all_kernels() {
  std::vector<cu::KernelSource> v;
  for (const Shape& s : ew_shapes()) {
    v.push_back(cu::gen_elementwise(ew_mixed_program(s)));
    v.push_back(cu::gen_elementwise(ew_ops_program(s)));
    v.push_back(cu::gen_elementwise_multi(ew_multi_programs(s)));
  }
  v.push_back(cu::gen_row_norm(layer_norm_spec()));
  v.push_back(cu::gen_row_norm(softmax_spec()));
  for (const cu::PoolSpec& s : pool_specs()) v.push_back(cu::gen_pool(s));
  for (const cu::AttentionSpec& s : attention_specs()) v.push_back(cu::gen_attention(s));
  return v;
}

}  // namespace fusert_src_emu

#ifdef FUSERT_SRC_EMU_GENERATOR
namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

// The host-compilable body of one kernel (see the file comment); throws on anything unexpected.
std::string patch(const cu::KernelSource& k, std::string* args_type) {
  std::string s = k.source;
  const std::string abi = std::string(cu::kernel_abi_source()) + "\n";
  if (s.compare(0, abi.size(), abi) != 0)
    throw std::runtime_error(k.entry + ": source does not start with the ABI text");
  s.erase(0, abi.size());
  if (s.find("#error") != std::string::npos) throw std::runtime_error(k.entry + ": source has #error");
  // extern "C" __global__ void __launch_bounds__(N) entry(const ArgsType a) -> void entry(...)
  const std::string head = "extern \"C\" __global__ void __launch_bounds__(";
  const size_t h = s.find(head);
  const size_t close = h == std::string::npos ? h : s.find(") ", h + head.size());
  if (close == std::string::npos || s.find(head, h + 1) != std::string::npos)
    throw std::runtime_error(k.entry + ": expected exactly one entry");
  s.replace(h, close + 2 - h, "void ");
  const std::string sig = k.entry + "(const ";
  const size_t a = s.find(sig);
  if (a == std::string::npos) throw std::runtime_error(k.entry + ": entry signature not found");
  *args_type = s.substr(a + sig.size(), s.find(' ', a + sig.size()) - a - sig.size());
  replace_all(s, "__device__ __forceinline__ ", "inline ");
  // extern __shared__ float NAME[];  ->  float* const NAME = fz_emu::dynamic_shared();
  const std::string ext = "extern __shared__ float ";
  for (size_t p = s.find(ext); p != std::string::npos; p = s.find(ext, p)) {
    const size_t end = s.find("[];", p);
    const std::string name = s.substr(p + ext.size(), end - p - ext.size());
    s.replace(p, end + 3 - p, "float* const " + name + " = fz_emu::dynamic_shared();");
  }
  replace_all(s, "__shared__ ", "static ");
  for (const char* left : {"__global__", "__device__", "__shared__", "__launch_bounds__", "extern"}) {
    if (s.find(left) != std::string::npos) throw std::runtime_error(k.entry + ": unpatched " + left);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: " << argv[0] << " OUTPUT.inc\n";
    return 2;
  }
  try {
    std::ostringstream body, table;
    std::set<std::string> seen;
    for (const cu::KernelSource& k : fusert_src_emu::all_kernels()) {
      if (!seen.insert(k.entry).second) continue;
      std::string args_type;
      const std::string text = patch(k, &args_type);
      body << "namespace " << k.entry << "_host {\n"
           << text << "\ninline void run(const void* args) { " << k.entry << "(*static_cast<const " << args_type
           << "*>(args)); }\n}  // namespace " << k.entry << "_host\n#undef FZ_NEG_INF\n\n";
      table << "    {\"" << k.entry << "\", &" << k.entry << "_host::run},\n";
    }
    std::ofstream f(argv[1]);
    f << "// Generated by tests/cuda_src_emu/gen_kernels.cc: fusert's generated CUDA kernels, patched to\n"
         "// compile as host C++ against tests/cuda_src_emu/shim.h. Include after shim.h and kernel_abi.h.\n"
         "#pragma once\n#pragma GCC diagnostic push\n"
         "#pragma GCC diagnostic ignored \"-Wsign-compare\"\n"
         "#pragma GCC diagnostic ignored \"-Wunused-variable\"\n"
         "#pragma GCC diagnostic ignored \"-Wunused-parameter\"\n"
         "namespace fz_generated {\n\n"
      << body.str()
      << "struct HostKernel {\n  const char* entry;\n  void (*run)(const void* args);\n};\n"
         "inline const HostKernel kHostKernels[] = {\n"
      << table.str() << "};\n\n}  // namespace fz_generated\n#pragma GCC diagnostic pop\n";
    if (!f) throw std::runtime_error(std::string("cannot write ") + argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "gen_kernels: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
#endif
