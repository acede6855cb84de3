// Models with symbolic dims (models/FORMAT.md, "Symbolic dimensions"): the dims' values of a
// run's inputs, and a bounded least-recently-used cache of per-shape execution plans. The
// fusion plan is made once, at the dims' opt point; each new input shape gets its own graph
// (the canonical graph with that shape's input shapes and symbolic constants, shapes
// re-inferred), lowering, memory plan and backend executor (arenas, library primitives).
#pragma once

#include <functional>
#include <list>
#include <memory>
#include <mutex>

#include "graph/fusion/group.h"
#include "graph/loader/model_loader.h"
#include "runtime/backend.h"
#include "runtime/execution_plan.h"

namespace fusert {

/// The values of `spec`'s symbolic dims in `inputs`. Errors (kShapeMismatch, naming the input,
/// the dimension and the dim): a missing input or wrong rank, a fixed dimension that differs,
/// one dim given two values, a value outside the declared range, 0 for an open dim (unless
/// `allow_zero`: the empty-input path of SessionImpl::run).
Result<DimValues> bind_dims(const ModelSpec& spec, const TensorMap& inputs, bool allow_zero = false);

/// "batch = 4, seq = 37"
std::string dims_str(const DimValues& v);

/// One input shape's executable form. Never moved once built (executors hold references).
struct ShapeInstance {
  DimValues dims;
  Graph graph;
  FusionPlan fusion;  ///< the session's plan; a copy re-planned at this shape only if lowering refused it
  bool replanned = false;
  ExecutionPlan plan;
  std::unique_ptr<Backend> backend;
  double build_ms = 0;  ///< graph + lowering + memory plan + executor
};

/// Bounded LRU cache of ShapeInstances keyed by dims. Thread-safe; an instance in use by a run
/// stays alive after eviction until that run ends (shared ownership).
class ShapeCache {
 public:
  using Builder = std::function<Result<std::shared_ptr<ShapeInstance>>(const DimValues&)>;
  explicit ShapeCache(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}
  /// The instance for `dims`, built by `build` on a miss (misses are built one at a time; a run
  /// of another cached shape is not blocked). `*hit` says which it was.
  Result<std::shared_ptr<ShapeInstance>> get(const DimValues& dims, const Builder& build, bool* hit);
  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  mutable std::mutex mu_;
  std::mutex build_mu_;
  std::list<std::shared_ptr<ShapeInstance>> lru_;  // most recently used first
};

}  // namespace fusert
