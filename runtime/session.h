// The public C++ API: load a YAML model and its weights, plan it, run it on named tensors.
//
//   fusert::SessionOptions opt;            // device "cpu", all cores, fusion "all"
//   auto s = fusert::Session::load("models/resnet18.yaml", opt);
//   if (!s.ok()) { std::cerr << s.status().to_string(); return 1; }
//   auto out = (*s)->run({{"input", image_nchw}});   // [1,3,224,224] f32 -> {"logits": [1,1000]}
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/fusion/group.h"
#include "graph/loader/model_loader.h"
#include "runtime/executor.h"

namespace fusert {

namespace cuda {
struct Backend;  // runtime/cuda: the CUDA plan and executor of a session
}

using TensorMap = std::map<std::string, Tensor>;

struct SessionOptions {
  std::string device = "cpu";  ///< "cpu" or "cuda" (cuda fails with a clear error without a GPU)
  int threads = 0;             ///< CPU worker threads; 0 = all cores
  std::string fusion = "all";  ///< "none", "all", or a comma list of vertical,horizontal,cross,compound
  bool profile_guided = false; ///< time every op unfused once; hot ops drive vertical fusion first
  std::string weights;         ///< safetensors path; empty = the model's own weights file if it declares one
  bool seeded = false;         ///< ignore weights files and use seeded weights (models/FORMAT.md)
  uint64_t seed = 0;           ///< seed for seeded weights
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
  std::string plan_for;        ///< testing: plan with this backend's cost model and capabilities
                               ///< ("cpu" or "cuda"; empty = device) but run on `device`, e.g. the
                               ///< CUDA plan's groups on the CPU kernels (the planner fuzzer)
  // CUDA backend (device "cuda")
  bool cuda_graph = true;      ///< capture the plan once per input shape and replay it (CUDA Graphs)
  bool tf32 = false;           ///< TF32 tensor-core math in cuBLASLt/cuDNN (off: exact fp32)
  std::string dump_kernels;    ///< directory to write every generated kernel's .cu source (empty: none)
  int register_budget = 0;     ///< CUDA: registers per thread a fused kernel may use (0: 32, full
                               ///< occupancy on sm_90: 65536 registers / 2048 threads per SM)
  bool plan_only = false;      ///< load, plan, generate and compile kernels, but do not touch a
                               ///< device (run() then fails); for --explain without a GPU
};

/// What loading and planning produced; sizes in bytes, times in ms.
struct SessionStats {
  int64_t nodes = 0;                 ///< graph nodes after loading
  int64_t kernels = 0;               ///< kernel launches per inference
  int64_t intermediate_bytes = 0;    ///< bytes of intermediates written + read per inference
  int64_t peak_activation_bytes = 0; ///< arena size after liveness-based reuse
  int64_t naive_activation_bytes = 0;///< sum of all activations without reuse
  double load_ms = 0;
  double plan_ms = 0;                ///< canonicalisation + fusion planning + lowering + memory planning
  double fusion_plan_ms = 0;         ///< the fusion planner alone
  double canonicalize_ms = 0;        ///< graph passes (constant folding, BN folding, ...)
  std::vector<std::string> pass_log; ///< canonicalisation passes that changed the graph
  std::string weights_source;        ///< file path or "seeded (seed N)"
  int64_t weight_bytes = 0;          ///< bytes of weights and constants the plan reads
  // CUDA backend
  std::string device_name;           ///< e.g. "NVIDIA H200 (sm_90)"; empty on the CPU
  int64_t generated_kernels = 0;     ///< distinct NVRTC-compiled kernels of the plan
  int64_t library_calls = 0;         ///< cuDNN / cuBLASLt launches per inference
  int64_t host_fallback_steps = 0;   ///< steps run on the CPU inside a CUDA plan (copies around them)
  double compile_ms = 0;             ///< NVRTC + nvJitLink time at load (0 when all cached)
  bool cuda_graph = false;           ///< runs replay a captured CUDA Graph
  double last_run_device_ms = 0;     ///< CUDA: the last run's plan time by CUDA events, excluding
                                     ///< input/output copies; CPU: the last run's wall time
};

class Session {
 public:
  /// Loads `model_path`, binds weights (options.weights, else the model's file, else seeded if
  /// the model declares none), lowers and plans memory. Errors: model file (file:line:col),
  /// weights (tensor names), device ("no CUDA device"), options.
  static Result<std::unique_ptr<Session>> load(const std::string& model_path, const SessionOptions& options);

  /// Runs one inference. Inputs by graph input name with exact dtype and shape.
  ///
  /// Thread safety: run() may be called concurrently from any number of threads on one
  /// session. On the CPU each call gets its own execution context (an activation arena from a
  /// pool; the pool grows to the most calls in flight at once), the weights and the plan are
  /// shared read-only, and outputs are bit-identical to a single-threaded run. Each call uses
  /// options().threads CPU threads for its kernels, set on the calling thread only: sessions
  /// with different thread counts in one process never interfere, and no process-wide
  /// setting (omp_set_num_threads for other threads, Eigen::setNbThreads) is changed. On CUDA,
  /// concurrent calls take turns on the session's stream. Loading, seeded_inputs() and the
  /// const accessors are safe to call concurrently with run(); stats().last_run_device_ms is
  /// written by every run (read it when no run is in flight).
  Result<TensorMap> run(const TensorMap& inputs);

  /// CUDA: creates the device context and executor for a session loaded with plan_only
  /// (load() does this itself otherwise). Errors: no device, driver, library, memory.
  Status init_device();

  /// CUDA: the backend's view of the plan, one line per step: library calls, generated
  /// kernels with nvJitLink register and spill counts, host fallbacks with the reason.
  /// Empty for the CPU.
  std::string backend_report() const;

  /// Seeded values for every graph input: f32 inputs with init kind `input`; integer inputs
  /// (token ids, masks) all ones. For benchmarks, --verify and goldens.
  TensorMap seeded_inputs(uint64_t seed = 0) const;

  const ModelSpec& model() const { return model_; }
  const Graph& graph() const { return model_.graph; }
  const ExecutionPlan& plan() const { return plan_; }
  const FusionPlan& fusion_plan() const { return fusion_; }
  const SessionStats& stats() const { return stats_; }
  const SessionOptions& options() const { return options_; }
  Executor& executor() { return *executor_; }

 private:
  Session() = default;
  static Result<std::unique_ptr<Session>> load_impl(const std::string& model_path, const SessionOptions& options);
  Result<std::map<std::string, double>> profile_unfused() const;
  ModelSpec model_;
  SessionOptions options_;
  ExecutionPlan plan_;
  FusionPlan fusion_;
  SessionStats stats_;
  std::unique_ptr<Executor> executor_;
  std::shared_ptr<cuda::Backend> cuda_;
  std::unique_ptr<std::mutex> run_mu_ = std::make_unique<std::mutex>();
};

/// OK when a CUDA device can be used; otherwise an error saying why (no CUDA in this build,
/// no driver, no device).
Status check_cuda_device();

}  // namespace fusert
