// Lowering of a FusionPlan to the CUDA backend: per kernel group, library anchors (cuDNN
// convolution, cuBLASLt GEMM) with the epilogue parts those libraries fuse, and generated
// kernels (kernels/cuda/codegen.h, compiled here with NVRTC + nvJitLink, no device needed) for
// everything no library call covers. A group that neither covers runs its CPU kernel on host
// copies (host fallback; --explain names it and why).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/fusion/group.h"
#include "kernels/cuda/codegen.h"
#include "kernels/cuda/context.h"
#include "kernels/cuda/nvrtc_compiler.h"
#include "runtime/execution_plan.h"

namespace fusert::cuda {

/// What a device step sees at run time. Pointers from `dev` are device pointers; the scratch
/// buffers are shared by all steps (they run one after another on one stream).
struct CudaPlan;
struct RunEnv {
  Context& ctx;
  const CudaPlan& plan;
  const std::vector<LoadedKernel>& kernels;  ///< by CudaPlan::kernels index
  const BufferTable& dev;
  float* scratch = nullptr;        ///< at least DeviceStep::scratch_bytes
  float* alias_scratch = nullptr;  ///< operand copies (launch_program's aliasing guard)
  size_t alias_scratch_elems = 0;
};

struct DeviceStep {
  std::string what;          ///< group name, for errors
  std::vector<int> kernels;  ///< generated kernels launched (CudaPlan::kernels indices)
  int library_calls = 0;     ///< cuDNN / cuBLASLt calls per run
  int copy_launches = 0;     ///< layout.cu kernels and memsets/copies per run
  /// Graph weights this step does not read on the device (replaced by its own uploaded
  /// constants: concatenated, stacked or folded), so the executor does not upload them for it.
  std::vector<ValueId> skip_weights;
  size_t scratch_bytes = 0;  ///< private scratch (anchor results before a generated tail)
  bool host = false;         ///< host fallback: Step::run on host copies of its buffers
  std::string host_reason;
  /// Once per executor, before the first run: descriptors, algorithms, constant uploads.
  std::function<Status(Context&)> prepare;
  /// Enqueues the step on env.ctx.stream(). Never synchronises.
  std::function<Status(const RunEnv&)> run;
  /// After the run has synchronised: data-dependent checks (Gather index range).
  std::function<Status()> after;
};

struct GeneratedKernel {
  KernelSource src;
  CompiledKernel bin;
  std::vector<std::string> groups;  ///< groups that launch it
};

struct CudaPlan {
  std::vector<Step> steps;         ///< names, buffers (memory planning), CPU run for host steps
  std::vector<DeviceStep> dsteps;  ///< parallel to steps
  std::vector<GeneratedKernel> kernels;
  size_t alias_scratch_bytes = 0;  ///< largest f32 activation (operand copy area)
  /// Group id -> (max registers, spill bytes) over its generated kernels, for --explain.
  std::map<int, std::pair<int, int>> group_registers;
  double compile_ms = 0;
};

/// Lowers every kernel group of `plan`; generated kernels are compiled (or read from the
/// cache) here. Errors name the group.
Result<CudaPlan> lower_plan_cuda(const Graph& g, const FusionPlan& plan);

/// The CUDA backend's capability check (FusionOptions::supports): whether `candidate` lowers
/// to library calls and generated kernels (generated, not compiled); the reason when not
/// (e.g. "asymmetric pads", "row of 40000 values exceeds shared memory").
FusionDecision check_capability(const Graph& g, const FusionGroup& candidate);

/// Register probe for the planner's vertical strategy on CUDA: generates and compiles the
/// kernel(s) the candidate group `nodes` (of `kind`) would get and reports the maximum
/// registers per thread and the spill bytes nvJitLink reports. Returns false when the
/// candidate has no generated kernel (the library fuses it all); when it cannot be generated,
/// returns true with *registers = -1 and the reason in *kernel.
bool probe_registers(const Graph& g, GroupKind kind, const std::vector<int>& nodes, int* registers, int* spill_bytes,
                     std::string* kernel);

}  // namespace fusert::cuda
