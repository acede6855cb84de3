// What a session is asked to do (SessionOptions) and what loading and running it measured
// (SessionStats). Below the session, so that backends read options without the session.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "fusert/tensor.h"

namespace fusert {

/// Named tensors: a run's inputs or outputs by graph input/output name.
using TensorMap = std::map<std::string, Tensor>;

/// A symbolic dim's range: any value in [min, max] at run time, planned at opt.
struct DimRange {
  int64_t min = 1;  ///< smallest value run() accepts
  int64_t max = 1;  ///< largest value run() accepts
  int64_t opt = 1;  ///< the value the fusion plan is made for (min <= opt <= max)
};

/// What a session is asked to do; the defaults run the CPU on all cores with every fusion
/// strategy. Invalid values are kInvalidArgument errors of Session::load().
struct SessionOptions {
  std::string device = "cpu";  ///< "cpu" or "cuda" (cuda fails with a clear error without a GPU)
  int threads = 0;             ///< CPU worker threads; 0 = all cores
  /// While a run uses every core the calling thread may run on, pin each CPU thread to one core:
  /// the calling thread for the run (its own core mask is restored after it), the OpenMP worker
  /// threads of its pool until they are re-pinned; nothing when OMP_PROC_BIND, OMP_PLACES or
  /// GOMP_CPU_AFFINITY is set. See cpu::CorePinScope.
  bool pin_threads = true;
  /// "all", "none", "raw", or a comma list of vertical,horizontal,cross,compound. "none" is the
  /// fair unfused baseline: the canonicalisation passes run (BatchNorm folded into convolutions,
  /// LayerNorm/GELU recognised, dead code removed) and then one kernel per op, so that fused /
  /// unfused measures fusion alone. "raw" runs the graph as written, one kernel per node
  /// (constant folding and dead-code removal only): the most independent reference.
  std::string fusion = "all";
  bool profile_guided = false;  ///< time every op unfused once; hot ops drive vertical fusion first
  /// ONNX models: fixes the shape of an input, by input name, e.g. {"input", {1, 3, 224, 224}}
  /// (`infer --shape input=1x3x224x224`). Without one, every symbolic dim of the input
  /// (dim_param, -1, 0, unnamed) stays open: run() takes any size >= 1, one execution plan per
  /// new shape (cached), the fusion plan made at load at a common size (batch 1, an image side
  /// 224, another dim 128, or the next size the model imports at; README "ONNX models").
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /// ONNX models: a range for a symbolic dim, by its dim_param (or "INPUT.D" for an unnamed
  /// dim), e.g. {"batch", {1, 64, 1}} (`infer --dim batch=1:64`): run() takes any value in the
  /// range, planned at opt, as for a YAML model's `dims:`. Errors of load(): a name no input dim
  /// carries, min < 1, opt outside.
  std::map<std::string, DimRange> dim_ranges;
  /// ONNX models: run a float64 model in float32 (`infer --f64-as-f32`): its float64 inputs and
  /// outputs are float32 tensors, its Casts to float64 Casts to float32, as OpenVINO's CPU plugin
  /// runs one. Results then differ from a float64 run by float32 rounding (about 1e-7 relative
  /// per op). Off (default): a float64 input or Cast to float64 is a load error that names this.
  bool f64_as_f32 = false;
  std::string weights;  ///< safetensors path; empty = the model's own weights file if it declares one
  bool seeded = false;  ///< ignore weights files and use seeded weights (models/FORMAT.md)
  uint64_t seed = 0;    ///< seed for seeded weights
  /// Largest activation arena (bytes) a session may allocate per execution context; a model
  /// whose memory plan needs more fails to load with an error naming both sizes instead of
  /// attempting the allocation. Default 8 GiB.
  int64_t max_activation_bytes = int64_t{8} << 30;
  /// Largest tensor (elements) a model may declare or infer: inputs, initializers, every node
  /// output. A model over it fails to load with an error naming the tensor, before anything is
  /// allocated. Default and ceiling 2^31 (kMaxTensorElements); a larger value is an error.
  int64_t max_tensor_elements = kMaxTensorElements;
  /// Largest total of weights and constants (bytes, as f32/i64 in memory) a model may declare,
  /// and largest weights file it may read; checked from the declared shapes and the file size
  /// before any weight is read, converted or seeded. Default 16 GiB.
  int64_t max_weight_bytes = int64_t{16} << 30;
  /// CPU backend anchors (Conv, Gemm, MatMul with their epilogues): "onednn" (default; oneDNN
  /// primitives with post-ops where they run optimised, the reference kernel elsewhere, the
  /// reason in the backend report) or "reference" (our Eigen/OpenMP kernels only). In a build
  /// without oneDNN, "onednn" runs the reference kernels and says so in the report.
  std::string cpu_kernels = "onednn";
  /// Arithmetic of the float anchors: "f32" (default) or "bf16" (`infer --precision bf16`): on the
  /// CPU's oneDNN kernels, Conv, Gemm and MatMul by constant weights round their source and
  /// weights to bfloat16 and accumulate in f32; tensors between steps, epilogues and every other
  /// op stay f32 (results differ from f32 by about 1e-2 relative). Load errors: a CPU without
  /// native bf16 (AVX512_BF16 or AMX), cpu_kernels "reference", device "cuda".
  std::string precision = "f32";
  std::string plan_for;     ///< testing: plan with this backend's cost model and capabilities
                            ///< ("cpu" or "cuda"; empty = device) but run on `device`, e.g. the
                            ///< CUDA plan's groups on the CPU kernels (the planner fuzzer)
  bool all_blocks = false;  ///< testing: the CPU reference kernels form 1x1 + depthwise blocks too
                            ///< (two convolutions in one step; their capability refuses blocks
                            ///< otherwise), so tests and the planner fuzzer reach that lowering
  /// testing (CPU), 0 = off: after every step, each float32 element it wrote is scaled by
  /// 1 + u * 2^-22, u uniform in [-1, 1) from a stream seeded by this value and the element's
  /// tensor: a few ulps per op, the size of the rounding differences a fused kernel may make.
  /// The planner fuzzer's conditioning probe runs the unfused graph so, with two seeds, to learn
  /// how far such differences carry to each output.
  uint64_t jitter_steps = 0;
  // CUDA backend (device "cuda")
  bool cuda_graph = true;    ///< capture the plan once per input shape and replay it (CUDA Graphs)
  bool tf32 = false;         ///< TF32 tensor-core math in cuBLASLt/cuDNN (off: exact fp32)
  std::string dump_kernels;  ///< directory to write every generated kernel's .cu source (empty: none)
  int register_budget = 0;   ///< CUDA: registers per thread a fused kernel may use (0: 32, full
                             ///< occupancy on sm_90: 65536 registers / 2048 threads per SM)
  bool plan_only = false;    ///< load, plan, generate and compile kernels, but do not touch a
                             ///< device (run() then fails); for --explain without a GPU
  /// Models with symbolic dims: input shapes other than the opt point whose execution plans
  /// (graph, lowering, memory plan, executor) are kept, least recently used evicted first.
  /// Each holds its own arenas and library primitives. Must be >= 1.
  int shape_cache_size = 16;
};

/// What loading and planning produced; sizes in bytes, times in ms.
struct SessionStats {
  int64_t nodes = 0;                   ///< graph nodes after loading
  int64_t kernels = 0;                 ///< kernel launches per inference
  int64_t intermediate_bytes = 0;      ///< bytes of intermediates written + read per inference
  int64_t peak_activation_bytes = 0;   ///< arena size after liveness-based reuse
  int64_t naive_activation_bytes = 0;  ///< sum of all activations without reuse
  double load_ms = 0;                  ///< reading the model and binding its weights
  double plan_ms = 0;                  ///< canonicalisation + fusion planning + lowering + memory planning
  double fusion_plan_ms = 0;           ///< the fusion planner alone
  double canonicalize_ms = 0;          ///< graph passes (constant folding, BN folding, ...)
  std::vector<std::string> pass_log;   ///< canonicalisation passes that changed the graph
  std::string weights_source;          ///< file path or "seeded (seed N)"
  int64_t weight_bytes = 0;            ///< bytes of weights and constants the plan reads
  // CUDA backend
  std::string device_name;          ///< e.g. "NVIDIA H200 (sm_90)"; empty on the CPU
  int64_t generated_kernels = 0;    ///< distinct NVRTC-compiled kernels of the plan
  int64_t library_calls = 0;        ///< cuDNN / cuBLASLt launches per inference
  int64_t host_fallback_steps = 0;  ///< steps run on the CPU inside a CUDA plan (copies around them)
  double compile_ms = 0;            ///< NVRTC + nvJitLink time at load (0 when all cached)
  bool cuda_graph = false;          ///< runs replay a captured CUDA Graph
  double last_run_device_ms = 0;    ///< CUDA: the last run's plan time by CUDA events, excluding
                                    ///< input/output copies; CPU: the last run's wall time
  // Symbolic dims (zero for a model of static shapes). A run at the opt point or at a cached
  // shape is a hit; a miss builds that shape's execution plan (ShapeInstance) first.
  int64_t shape_cache_hits = 0;     ///< runs at the opt point or at a cached shape
  int64_t shape_cache_misses = 0;   ///< runs that built their shape's execution plan first
  int64_t shape_replans = 0;        ///< misses whose shape the session's fusion plan could not lower
  double shape_build_ms_last = 0;   ///< time of the last miss's build (graph, lowering, memory, executor)
  double shape_build_ms_max = 0;    ///< the slowest miss so far
  double shape_build_ms_total = 0;  ///< all misses
  /// Execution stages: 1, or more where an op's output size depends on the data (NonZero,
  /// NonMaxSuppression, a TopK with a computed K): the plan is split there and what follows is
  /// shaped per run at the size returned (the shape cache counters above sum the stages').
  int64_t execution_stages = 1;
};

}  // namespace fusert
