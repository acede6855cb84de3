// Building blocks of the CUDA lowering: elementwise programs whose inputs and outputs are
// bound to graph values (or to scratch buffers), their argument structs, and the launch of a
// generated kernel with the operand-aliasing guard.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/kernel_abi.h"
#include "runtime/cuda/cuda_lowering.h"
#include "runtime/lowering/spec.h"

namespace fusert::cuda {

/// A host constant (concatenated weights, scaled biases, Pad's value, Resize's sampling tables)
/// uploaded once in prepare().
class DeviceConstant {
 public:
  explicit DeviceConstant(std::vector<uint8_t> bytes) : host_(std::move(bytes)) {}
  ~DeviceConstant();
  DeviceConstant(const DeviceConstant&) = delete;
  DeviceConstant& operator=(const DeviceConstant&) = delete;
  Status upload(const std::string& what);
  const float* get() const { return static_cast<const float*>(dev_); }
  const void* raw() const { return dev_; }

 private:
  std::vector<uint8_t> host_;
  void* dev_ = nullptr;
};
using ConstPtr = std::shared_ptr<DeviceConstant>;
/// A constant of `n` bytes at `data`.
inline ConstPtr make_const_bytes(const void* data, size_t n) {
  const auto* b = static_cast<const uint8_t*>(data);
  return std::make_shared<DeviceConstant>(std::vector<uint8_t>(b, b + n));
}
inline ConstPtr make_const(const std::vector<float>& v) { return make_const_bytes(v.data(), v.size() * sizeof(float)); }

/// Where a program input or output lives at run time.
struct Binding {
  enum Kind { kValue, kScratch, kConstant } kind = kValue;
  ValueId value = kNoValue;  ///< kValue
  int64_t offset = 0;        ///< elements from the start of the buffer
  ConstPtr constant;         ///< kConstant (uploaded by the step's prepare)
};

/// An elementwise program plus the buffers its inputs and outputs bind to.
struct BoundProgram {
  kern::ElementwiseProgram prog;
  std::vector<Binding> inputs;
  std::vector<Binding> outputs;

  /// Adds (or reuses) input `v` broadcast to prog.out_shape by numpy rules; returns its index.
  int add_value(const Graph& g, ValueId v);
  /// Adds an input read with explicit element strides over prog.out_shape.
  int add_binding(const Binding& b, const std::vector<int64_t>& strides);
  /// Appends epilogue steps (from build_epilogue) applied to register `reg`.
  void append_steps(const Graph& g, const std::vector<kern::EpilogueStep>& steps, const std::vector<ValueId>& operands,
                    int reg);
};

/// Contiguous element strides of `shape`, and numpy broadcast strides of `t` against `out`
/// (0 where t has extent 1 or is missing).
std::vector<int64_t> contiguous_strides(const Shape& shape);
std::vector<int64_t> broadcast_strides(const Shape& t, const Shape& out);

/// Fills FzEwArgs for `bp` (shape and strides right-aligned to FZ_MAX_RANK as kernel_abi.h
/// says) with the run's pointers.
FzEwArgs ew_args(const BoundProgram& bp, const RunEnv& env);
const float* bind_in(const Binding& b, const RunEnv& env);
float* bind_out(const Binding& b, const RunEnv& env);

/// Registry of the plan's generated kernels: each distinct source compiled once.
class KernelTable {
 public:
  /// `compile` false: sources are recorded but not compiled (the planner's capability check
  /// asks whether a group can be generated, not what it compiles to).
  explicit KernelTable(CudaPlan* plan, bool compile = true) : plan_(plan), compile_(compile) {}
  /// Compiles (or finds) `src` for group `what`; returns its CudaPlan::kernels index.
  Result<int> add(const KernelSource& src, const std::string& what);

 private:
  CudaPlan* plan_;
  bool compile_;
};

/// Launches generated kernel `k` over the program `bp` (1-D grid-stride). Any input that
/// overlaps an output without being read at the same flat index is first copied to
/// env.alias_scratch, so a buffer the memory planner reused is never read after it is written.
Status launch_program(const RunEnv& env, int k, const BoundProgram& bp, const std::string& what);

/// Dynamic shared memory a generated kernel may ask for: sm_90's 227 KiB opt-in per block
/// minus 4 KiB for the kernels' static shared memory (reduction buffers and the 1 KiB the
/// toolchain reserves: 1.1-1.7 KiB in the cubins). Larger rows fall back to the host.
constexpr size_t kMaxDynamicShared = 227u * 1024 - 4096;

/// Grid size for a 1-D grid-stride launch of `numel` elements.
unsigned grid_1d(int64_t numel, int block);

}  // namespace fusert::cuda
