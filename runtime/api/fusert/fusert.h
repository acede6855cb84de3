// fusert's public C++ API: the one header an application includes. Load a YAML model with its
// weights, let the fusion planner plan it once, run it on named tensors from any number of
// threads. Everything the planner and the executor are made of stays behind Session (pimpl):
// they change without recompiling or breaking applications.
//
//   #include <fusert/fusert.h>
//   fusert::SessionOptions opt;                       // device "cpu", all cores, fusion "all"
//   auto s = fusert::Session::load("resnet18.yaml", opt);
//   if (!s.ok()) { std::cerr << s.status().to_string() << "\n"; return 1; }
//   auto out = (*s)->run({{"input", image_nchw}});   // [1,3,224,224] f32 -> {"logits": [1,1000]}
//
// Installed with `cmake --install`; consumed with find_package(fusert CONFIG REQUIRED) and
// target fusert::fusert, or with pkg-config (fusert.pc). See README.md, "C++ API".
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fusert/export.h"
#include "fusert/options.h"
#include "fusert/status.h"
#include "fusert/tensor.h"

/// The fusert runtime.
namespace fusert {

/// Values of a model's symbolic dims by name, e.g. {{"batch", 4}, {"seq", 37}}.
using DimValues = std::map<std::string, int64_t>;

/// One dimension of a graph input or output as an application sees it.
struct Dim {
  int64_t value = 0;   ///< the fixed size, or the symbolic dim's value at its opt point
  std::string symbol;  ///< the symbolic dim's name ("batch", "seq"); empty for a fixed dimension;
                       ///< "?" for an output dimension that follows the dims another way (batch * seq)
  int64_t min = 0;     ///< the symbolic dim's smallest value (0 for a fixed dimension and "?")
  int64_t max = 0;     ///< the symbolic dim's largest value (0 for a fixed dimension and "?")
};

/// A graph input or output: its name, element type and dims (outermost first; NCHW for images).
struct TensorInfo {
  std::string name;           ///< the name run() takes or returns it under
  DType dtype = DType::kF32;  ///< element type
  std::vector<Dim> dims;      ///< shape, with symbolic dims named
};

/// One plan step's share of an inference (Session::profile).
struct StepTime {
  std::string name;    ///< the step: a fusion group's name or the node it runs
  std::string kernel;  ///< the kernel that runs it (e.g. "onednn.conv", "fused_elementwise")
  std::string detail;  ///< what the backend made of it (the oneDNN primitive and post-op chain)
  int nodes = 0;       ///< graph nodes the step computes
  double ms = 0;       ///< median wall time of the step, ms
  /// Floating-point operations of the step's nodes at the profiled shape (a multiply-add
  /// counts 2; Conv, Gemm, MatMul and elementwise ops, 0 for data movement): flops / ms / 1e6
  /// is the step's GFLOP/s.
  double flops = 0;
  /// The kernel is a plain reference loop (one element at a time, no vectorisation or
  /// threads): correct but slow; a model where such steps take a large share is a gap.
  bool reference_loop = false;
};

// The internals behind a Session, declared for the introspection accessors only; their
// definitions are in the source tree's headers and are not installed.
class SessionImpl;
class Graph;
struct ModelSpec;
struct ExecutionPlan;
struct FusionPlan;

/// A loaded, planned model, ready to run. Create with load(); not copyable.
///
/// **Thread safety.** run() may be called concurrently from any number of threads on one
/// session. On the CPU each call gets its own execution context (an activation arena from a
/// pool that grows to the most calls in flight at once); the weights and the plan are shared
/// read-only, and outputs are bit-identical to a single-threaded run. Each call uses
/// options().threads CPU threads for its kernels, set on the calling thread only: sessions with
/// different thread counts in one process never interfere, and no process-wide setting
/// (omp_set_num_threads for other threads, Eigen::setNbThreads) is changed. On CUDA, concurrent
/// calls take turns on the session's stream. load() may run concurrently with anything.
/// inputs(), outputs(), labels(), read_image(), seeded_inputs(), options() and stats() may be
/// called concurrently with run(); the stats' last-run fields are written by every run (read
/// them when no run is in flight). Destroying a session while a call on it is in flight is
/// undefined behaviour.
///
/// **Untrusted files.** Model, weights and image files are checked before use: sizes against
/// SessionOptions' limits before anything is allocated, shapes before anything is read. A bad
/// file is an error naming the file and line, node or tensor, never a crash.
class FUSERT_API Session {
 public:
  using TensorInfo = fusert::TensorInfo;  ///< the namespace-level type, older spelling
  using Dim = fusert::Dim;                ///< the namespace-level type, older spelling
  using StepTime = fusert::StepTime;      ///< the namespace-level type, older spelling

  /// Loads the YAML model at `model_path` (models/FORMAT.md), binds its weights
  /// (options.weights, else the model's own weights file, else seeded if the model declares
  /// none), canonicalises the graph, makes the fusion plan, lowers it and plans memory.
  /// Errors: kNotFound (model or weights file), kParseError (file:line:col of the YAML, the
  /// safetensors header), kShapeMismatch (a weight's shape, naming the tensor), kUnsupported
  /// (an op or dtype), kInvalidArgument (options, a limit exceeded), kDeviceError ("no CUDA
  /// device"), kIoError (out of memory while loading).
  static Result<std::unique_ptr<Session>> load(const std::string& model_path, const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  /// Runs one inference. `inputs`: one tensor per graph input, by name, with the declared dtype
  /// and shape: exactly the declared shape, or for a model with symbolic dims any value of each
  /// dim within its range (one value per dim across inputs). Returns the graph outputs by name.
  /// The first run at a new shape builds its execution plan (stats().shape_cache_misses,
  /// shape_build_ms_*); later runs reuse it while it stays among options().shape_cache_size most
  /// recently used shapes. Errors: kInvalidArgument (a missing or unknown input, a wrong dtype),
  /// kShapeMismatch (naming the input, its dimension, the dim and the declared range), the
  /// errors of a data-dependent check (e.g. a Gather index out of range), kDeviceError (CUDA).
  Result<TensorMap> run(const TensorMap& inputs);

  /// The graph inputs in declaration order, with their symbolic dims and ranges.
  std::vector<TensorInfo> inputs() const;
  /// The graph outputs: a dimension that follows one symbolic dim carries its name and range;
  /// one that changes with the dims another way has symbol "?"; sizes at the opt point.
  std::vector<TensorInfo> outputs() const;

  /// Decodes a PNG or JPEG file and applies the model's image preprocessing (models/FORMAT.md,
  /// `preprocess:`): short-side bilinear resize, centre crop, (x / divisor - mean) / std.
  /// Returns the f32 NCHW tensor [1, 3, crop, crop] for the model's image input. Errors:
  /// kUnsupported (the model declares no preprocessing), kNotFound / kParseError (the file:
  /// missing, not PNG/JPEG, truncated or corrupt), kInvalidArgument (an image over 8192 x 8192
  /// pixels, checked before its pixels are allocated).
  Result<Tensor> read_image(const std::string& path) const;
  /// Class names from the model's labels file, one per line, index = class id; empty when the
  /// model declares none. Errors: kNotFound / kIoError reading the declared file.
  Result<std::vector<std::string>> labels() const;

  /// Seeded values for every graph input, for benchmarks and smoke tests: f32 inputs drawn
  /// from `seed` as the model's seeded init for inputs gives (models/FORMAT.md); integer inputs
  /// (token ids, masks) all ones. A model with symbolic
  /// dims gets them at `dims`; a dim not given keeps its opt value.
  TensorMap seeded_inputs(uint64_t seed = 0, const DimValues& dims = {}) const;

  /// Where the time of one inference goes: `runs` runs of `inputs` (after one untimed run),
  /// each plan step's median wall time (ms), in plan order. CPU only. Errors: those of run();
  /// kInvalidArgument for runs < 1; kUnsupported on a backend that does not time steps (CUDA:
  /// the plan runs as one CUDA Graph; use Nsight Systems).
  Result<std::vector<StepTime>> profile(const TensorMap& inputs, int runs) const;

  /// CUDA: creates the device context and executor of a session loaded with
  /// SessionOptions::plan_only (load() does this itself otherwise). Errors: kDeviceError (no
  /// device, driver, library, device memory).
  Status init_device();
  /// CUDA: the backend's view of the plan, one line per step (library calls, generated kernels
  /// with register and spill counts, host fallbacks with the reason). Empty for the CPU.
  std::string backend_report() const;
  /// The fusion plan as `infer --explain` prints it: every group with its nodes and the
  /// rejected candidates with their reasons; for a model with data-dependent output shapes,
  /// per execution stage, with the ops that run between stages (SessionStats::execution_stages).
  std::string explain() const;

  /// What loading, planning and running measured (kernels, bytes, ms, shape-cache counts).
  const SessionStats& stats() const;
  /// The options the session was loaded with.
  const SessionOptions& options() const;
  /// Execution contexts (activation arenas) created so far: the most runs in flight at once.
  size_t execution_contexts() const;

  /// @name Introspection for fusert's own tools (infer, bench, tests)
  /// These return internal types whose definitions live in the source tree (graph/,
  /// runtime/) and are not installed; they are not part of the stable API.
  ///@{

  /// The loaded model (graph and metadata).
  const ModelSpec& model() const;
  /// The canonical graph the plan was made from. A model with data-dependent output sizes
  /// (stats().execution_stages > 1): the whole graph as imported; plan() and fusion_plan() are
  /// then its first stage's (on that stage's own graph), and explain() shows every stage.
  const Graph& graph() const;
  /// The lowered plan: steps, memory plan.
  const ExecutionPlan& plan() const;
  /// The fusion planner's groups and refusals.
  const FusionPlan& fusion_plan() const;
  ///@}

 private:
  explicit Session(std::unique_ptr<SessionImpl> impl);
  std::unique_ptr<SessionImpl> impl_;
};

/// The library's version, "MAJOR.MINOR.PATCH".
FUSERT_API const char* version();

/// The devices this build runs (SessionOptions::device values), in registration order: "cpu",
/// then "cuda" where the library was built with the CUDA toolkit (whether a GPU is there is
/// checked when a session loads), then any backend registered in-tree (runtime/backend.h's
/// register_backend, as the tests' plug-in backend is).
FUSERT_API std::vector<std::string> devices();

}  // namespace fusert
