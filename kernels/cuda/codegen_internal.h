// Internal to the CUDA generators (kernels/cuda/codegen_*.cc, one file per kernel family:
// elementwise, row_norm, pool, attention): the pieces every family shares. Not part of
// codegen.h's interface.
//
// Each generator writes a translation unit from the group's structure only: the ABI text,
// fixed device helpers, one inlined device function per program, and one entry. The entry name
// hashes the text, so equal structures give byte-identical sources and share one compiled
// kernel. Register values of an elementwise program become scalar locals `rK`; ops mirror
// kernels/cpu/fused_epilogue.cc exactly (NaN handling included), with libdevice's IEEE
// functions (expf, erff, tanhf), never intrinsics. Each generator also records the spec of the
// entry (kernel_spec.h) for the host references (tests/cuda_oracle).
#pragma once

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>

#include "kernels/cuda/codegen.h"

namespace fusert::cuda::detail {

using kern::ElementwiseInstr;
using kern::ElementwiseProgram;
using kern::EpOp;

constexpr int kEwBlock = 256, kRowBlock = 256, kPoolBlock = 256, kAttnBlock = 128;
constexpr int kMaxRank = 6, kMaxInputs = 8, kMaxOutputs = 4, kMaxMembers = 4;
/// Stands for the entry name in a body until finish() names the kernel.
inline constexpr const char* kEntryToken = "FZ_ENTRY_NAME";

/// Exact hex-float literal of `v` ("0x1.8p+1f"; NaN/Inf as expressions).
std::string hex_float(float v);
/// Device helpers every kernel may use (relu, clip, sigmoid, GELU, NaN-aware max).
std::string math_helpers();
/// Warp and block reductions (sum, max) over a __shared__ float[32].
extern const char* const kReduceHelpers;
/// Completes a kernel: the entry name hashes `kind` and the body (with kEntryToken in place of
/// the name), then the ABI text is prepended.
KernelSource finish(const std::string& kind, const std::string& body, int block);

/// Expression of input k at the current element.
using InputRead = std::function<std::string(int)>;
/// Name of register r ("r3").
std::string reg(int r);
/// Appends the registers, loads and code of `prog`. Register 0 starts as `init0` (an implicit
/// load or a preset value; "" for none); `num_inputs` bounds input indices. Malformed programs
/// emit #error, so the compile fails naming the problem.
void emit_program(std::ostringstream& os, const ElementwiseProgram& prog, const InputRead& read,
                  const std::string& init0, int num_inputs, int result_reg);
/// Whether register 0 is loaded from input 0 without an explicit load.
bool implicit_load0(const ElementwiseProgram& prog, int num_inputs);
/// The value a pre/post program produces: stores[0]'s register, else register 0.
int result_register(const ElementwiseProgram& prog);
/// `float <name>(const <Args>& a, <index params>[, const float v])`: the program at one
/// element; register 0 starts as v (post programs) or as input 0 (pre programs).
void emit_value_fn(std::ostringstream& os, const std::string& name, const std::string& args_type,
                   const std::string& params, const ElementwiseProgram& prog, const InputRead& read, bool preset);

}  // namespace fusert::cuda::detail
