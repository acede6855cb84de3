// CUDA generators of elementwise programs: one program per launch, or up to four members of a
// horizontal group in one launch (blockIdx.y = member). See codegen.h.
#include "kernels/cuda/codegen.h"

#include <sstream>

#include "kernels/cuda/codegen_internal.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"

namespace fusert::cuda {

using namespace detail;

namespace {

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

}  // namespace fusert::cuda
