// The lowered, backend-specific form of a graph: an ordered list of kernel launches (steps)
// over buffers placed by the memory planner.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

/// Resolves a value to its buffer during a run (arena slot, bound input, or weight).
class BufferTable {
 public:
  virtual ~BufferTable() = default;
  virtual float* f32(ValueId id) const = 0;
  virtual void* raw(ValueId id) const = 0;
};

/// A step whose kernel can read some inputs or write its `output` in a layout of its own of the
/// same size (e.g. NHWC for a oneDNN convolution) instead of the graph's NCHW; the CPU backend's
/// layout pass (runtime/cpu/layout.cc) decides, after checking every other reader and writer of
/// each buffer, and calls `apply` once before any run.
struct NativeLayout {
  struct Read {
    ValueId value = kNoValue;
    std::vector<int64_t> strides;  ///< the layout accepted (see output_strides); empty: none
    bool used = false;             ///< what the layout pass chose
    /// Any layout its producer offers is accepted (a data-movement step such as Concat); the
    /// layout pass then sets `strides` to the producer's layout.
    bool any = false;
  };
  /// Buffers the step may read in a native layout: a convolution's source, the residual its sum
  /// post-op adds. A value listed here is read by the step in no other way.
  std::vector<Read> reads;
  ValueId output = kNoValue;
  /// The layout offered, of the size of NCHW: the element strides over (N, C, H, W) of a dense
  /// layout (NHWC: C*H*W, 1, W*C, C), or over (N, C/b, H, W) followed by b for a channel-blocked
  /// one (oneDNN's nChw8c, C % 8 == 0: channel c at (c / b) * stride + c % b). Empty: none.
  std::vector<int64_t> output_strides;
  bool output_used = false;  ///< what the layout pass chose
  /// The output may take whatever layout its readers accept, all alike (output_strides empty
  /// until the layout pass sets it from them).
  bool output_any = false;
  /// A step that runs in the layout of its inputs (runtime/cpu/layout_follow.h): its reads (all
  /// `any`) accept only NCHW, NHWC or unpadded channel blocks, and its output (if `output` is set)
  /// takes the layout of its first read that the pass kept native, if every reader accepts it.
  bool follows = false;
  /// Called once by the layout pass after it set `used` / `output_used`.
  std::function<void(const NativeLayout&)> apply;
  /// When set, the step's `detail` after `apply` (a kernel that the chosen layouts change).
  std::function<std::string()> describe;
};

/// One kernel launch. `run` holds the kernel's parameters (captured at lowering time) and
/// reads/writes only the buffers of `inputs`/`outputs`.
struct Step {
  std::string name;              ///< node name, or group name for fused steps
  std::string kernel;            ///< kernel name for stats and profiles, e.g. "conv2d"
  std::string detail;            ///< what the backend made of it (e.g. the oneDNN post-op chain, or why not)
  std::vector<int> nodes;        ///< graph node indices this step computes
  std::vector<ValueId> inputs;   ///< activations and weights read
  std::vector<ValueId> outputs;  ///< values written to memory
  std::function<void(const BufferTable&)> run;
  /// A view step (Reshape, Flatten, Unsqueeze, Identity): no kernel; the output shares the
  /// buffer of this value (the memory planner places both in one slot).
  ValueId alias_of = kNoValue;
  /// An input whose buffer the step may write its one output over (the oneDNN convolution's
  /// sum post-op adds the residual held in its destination): the memory planner gives the
  /// output that buffer when this step reads the input last, in no other role, and both are
  /// activations of one size (runtime/memory_planner.h). The kernel must cope with the alias.
  ValueId in_place_of = kNoValue;
  /// Optional data-dependent validation run before `run` (e.g. Gather index range); its error
  /// names the node and tensor, and the run stops.
  std::function<Status(const BufferTable&)> check;
  std::shared_ptr<NativeLayout> native;  ///< CPU: oneDNN convolutions and pooling, Concat
  /// The kernel is a plain reference loop (one element at a time, no vectorisation or
  /// threads): correct, slow. `infer --profile` marks such steps and sums their time.
  bool reference_loop = false;
};

/// What one run measured.
struct RunInfo {
  double device_ms = 0;         ///< CPU: wall time of the steps; CUDA: CUDA-event time of the plan, copies excluded
  bool cuda_graph = false;      ///< the run replayed a captured CUDA Graph
  bool want_step_ms = false;    ///< asks the backend for step_ms (CPU only; CUDA leaves it empty)
  std::vector<double> step_ms;  ///< wall time of each plan step in ms, in plan order
};

/// Where an activation lives in the arena.
struct BufferSlot {
  ValueId root = kNoValue;  ///< the value whose buffer this one aliases (itself if none)
  size_t offset = 0;
  size_t bytes = 0;
  int first_step = 0, last_step = 0;  ///< liveness interval, inclusive
};

struct ExecutionPlan {
  std::vector<Step> steps;
  std::vector<BufferSlot> slots;      ///< indexed by ValueId; bytes == 0 for weights/unused
  size_t arena_bytes = 0;             ///< peak activation bytes (arena size)
  size_t naive_activation_bytes = 0;  ///< sum of all activation sizes (no reuse)
  size_t intermediate_bytes = 0;      ///< bytes written + read of values passed between steps
};

/// Lowers node `ni` of `g` to one CPU step (its own kernel). Errors name the node.
Result<Step> lower_node_cpu(const Graph& g, int ni);
/// Lowers every node of `g` to one CPU step (unfused, no views). Errors name the node.
Result<std::vector<Step>> lower_graph_cpu(const Graph& g);

}  // namespace fusert
