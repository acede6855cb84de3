// The public C++ API: load a YAML model and its weights, plan it, run it on named tensors.
//
//   fusert::SessionOptions opt;            // device "cpu", all cores, fusion "all"
//   auto s = fusert::Session::load("models/resnet18.yaml", opt);
//   if (!s.ok()) { std::cerr << s.status().to_string(); return 1; }
//   auto out = (*s)->run({{"input", image_nchw}});   // [1,3,224,224] f32 -> {"logits": [1,1000]}
#pragma once

#include <map>
#include <memory>
#include <string>

#include "graph/fusion/group.h"
#include "graph/loader/model_loader.h"
#include "runtime/executor.h"

namespace fusert {

using TensorMap = std::map<std::string, Tensor>;

struct SessionOptions {
  std::string device = "cpu";  ///< "cpu" or "cuda" (cuda fails with a clear error without a GPU)
  int threads = 0;             ///< CPU worker threads; 0 = all cores
  std::string fusion = "all";  ///< "none", "all", or a comma list of vertical,horizontal,cross,compound
  bool profile_guided = false; ///< time every op unfused once; hot ops drive vertical fusion first
  std::string weights;         ///< safetensors path; empty = the model's own weights file if it declares one
  bool seeded = false;         ///< ignore weights files and use seeded weights (models/FORMAT.md)
  uint64_t seed = 0;           ///< seed for seeded weights
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
};

class Session {
 public:
  /// Loads `model_path`, binds weights (options.weights, else the model's file, else seeded if
  /// the model declares none), lowers and plans memory. Errors: model file (file:line:col),
  /// weights (tensor names), device ("no CUDA device"), options.
  static Result<std::unique_ptr<Session>> load(const std::string& model_path, const SessionOptions& options);

  /// Runs one inference. Inputs by graph input name with exact dtype and shape.
  Result<TensorMap> run(const TensorMap& inputs);

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
  Result<std::map<std::string, double>> profile_unfused() const;
  ModelSpec model_;
  SessionOptions options_;
  ExecutionPlan plan_;
  FusionPlan fusion_;
  SessionStats stats_;
  std::unique_ptr<Executor> executor_;
};

/// OK when a CUDA device can be used; otherwise an error saying why (no CUDA in this build,
/// no driver, no device).
Status check_cuda_device();

}  // namespace fusert
