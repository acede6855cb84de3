// The planner's product: fusion groups (each one kernel launch, or a compound of several),
// the rejected candidates with their reasons, and the options that steer planning.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/fusion/decision.h"
#include "graph/ir.h"

namespace fusert {

/// The four strategies of docs/fusion-strategies.md; kNone marks a single-op group.
enum class Strategy { kNone, kVertical, kHorizontal, kCross, kCompound };
const char* strategy_name(Strategy s);  ///< "none", "vertical", "horizontal", "cross", "compound"
bool parse_strategy(const std::string& s, Strategy* out);

/// The kernel shape a group lowers to; backends declare which kinds they support.
enum class GroupKind {
  kSingle,              ///< one node, its own kernel (aliases such as Reshape have no kernel)
  kAnchorEpilogue,      ///< Conv/Gemm/MatMul + elementwise chain (+ residual operand, + GAP tail)
  kElementwise,         ///< elementwise/broadcast chain in one pass
  kRowNorm,             ///< elementwise prologue + LayerNorm/Softmax + elementwise post
  kGemmLayerNorm,       ///< Gemm + elementwise chain + LayerNorm (+ post)
  kHorizontalGemm,      ///< Gemms (or 1x1 convs) sharing one input: one GEMM on concatenated weights
  kGroupedGemm,         ///< same-shape Gemms on different inputs: one grouped launch
  kGroupedRowNorm,      ///< same-shape LayerNorms on different inputs: one launch
  kConvSum,             ///< cross: two convs joined by Add (+ chain), both computed per output tile
  kBranchMerge,         ///< cross: two conv branches on one input balanced into one stacked conv
  kAttention,           ///< softmax(Q K^T * scale + mask) V over the heads, with the head reshapes
  kPointwiseDepthwise,  ///< vertical block: 1x1 conv + unary chain, then the depthwise conv that
                        ///< consumes it + unary chain (inverted-residual expand + depthwise)
};
const char* group_kind_name(GroupKind k);

/// An attention group decoded once by the planner (graph/fusion/attention_pattern.h matches it);
/// both lowerings read it instead of matching the pattern again.
struct AttentionMatch {
  std::vector<int> nodes;                            ///< every node of the pattern, topological order
  ValueId q = kNoValue, k = kNoValue, v = kNoValue;  ///< token-major [B*S, H*D] (or [B,S,H*D])
  ValueId mask = kNoValue;                           ///< additive mask, broadcast to [B,H,S,S]
  ValueId out = kNoValue;                            ///< token-major result
  float scale = 1.f;
  int64_t batch = 0, heads = 0, seq = 0, head_dim = 0;
  int64_t mask_b_stride = 0, mask_i_stride = 0;  ///< element strides of the mask (0 = broadcast)
};

/// A branch-merge group decoded once by the planner (graph/fusion/cross.cc): the two convs,
/// the join, each branch's chain up to the join, the merge chain after it, and the stacked
/// kernel (cross.h stacked_conv: the larger kernel, pads top/left/bottom/right, dilation kept).
struct BranchMergeSpec {
  int conv_a = -1, conv_b = -1, join = -1;
  std::vector<int> chain_a, chain_b, post;
  int64_t kh = 0, kw = 0;
  std::vector<int64_t> pads;
};

struct FusionGroup {
  int id = -1;
  Strategy strategy = Strategy::kNone;
  GroupKind kind = GroupKind::kSingle;
  std::string name;              ///< e.g. "vertical:layer1.0.conv1+relu"
  std::vector<int> nodes;        ///< member node indices in topological order
  std::vector<int> children;     ///< compound only: ids of member groups
  int parent = -1;               ///< id of the enclosing compound group, or -1
  std::vector<ValueId> outputs;  ///< values the group writes to memory
  // Cost-model annotations (graph/fusion/cost_model.h)
  int64_t bytes_saved = 0;  ///< intermediate bytes not written + not read again
  int64_t launches_saved = 0;
  int register_estimate = 0;                        ///< registers per thread (estimate or measured)
  int registers_measured = -1;                      ///< CUDA: nvJitLink's count for the group's generated kernel
  int spill_bytes = -1;                             ///< CUDA: spill stores + loads of that kernel
  double imbalance_ratio = 0;                       ///< cross groups: max/min branch FLOPs (after balancing)
  bool balanced = false;                            ///< cross groups: cheaper branch zero-padded
  int join = -1;                                    ///< cross groups: the join node (Add/Mul/Sub) the branches meet at
  std::shared_ptr<const AttentionMatch> attention;  ///< attention groups: the decoded pattern
  std::shared_ptr<const BranchMergeSpec> branch_merge;  ///< branch-merge groups: the decoded layout
  std::string note;                                     ///< planner remark shown by --explain
  std::string host_reason;                              ///< single-op group the backend cannot run: it runs on the
                            ///< host, for this reason (decided by the planner, shown by --explain)
  int depth() const { return static_cast<int>(nodes.size()); }
};

/// A candidate the planner considered and refused, with the reason.
struct Rejection {
  Strategy strategy = Strategy::kNone;
  std::vector<int> nodes;
  std::string key;     ///< category, e.g. "imbalance", "multi_use", "graph_output"
  std::string reason;  ///< "not fused: branch FLOP ratio 9.0 > 3.0"
};

/// The machine the planner prices a merge on (roofline model): peak arithmetic, memory bandwidth
/// and the overhead of one launch. Each backend hands its own to the planner (its registry entry,
/// runtime/backend.h); the default is the CPU backend's (runtime/cpu/cpu_backend.cc), for a
/// planner run without a backend.
struct Roofline {
  double peak_flops = 50e9;   ///< FLOP/s
  double bytes_per_s = 15e9;  ///< memory bandwidth, bytes/s
  double launch_us = 5.0;     ///< microseconds per launch (step dispatch, kernel launch)
};

/// Which strategies run, and knobs of the cost model.
struct FusionOptions {
  std::set<Strategy> enabled = {Strategy::kVertical, Strategy::kHorizontal, Strategy::kCross, Strategy::kCompound};
  double max_imbalance = 3.0;                ///< the source's 1:3 rule
  int register_budget = 64;                  ///< registers per thread for full occupancy (CPU: vector regs)
  double max_peak_growth = 0.25;             ///< refuse a merge raising peak activation bytes by more
  std::map<std::string, double> profile_ms;  ///< profile-guided: measured ms per node name
  std::string backend = "cpu";               ///< the backend's name (refusals name it)
  Roofline roofline;                         ///< the backend's cost constants
  /// Measured register pressure (CUDA): compiles the kernel a candidate group would get and
  /// reports registers per thread and spill bytes; false when it has no generated kernel;
  /// registers -1 when the candidate cannot be generated (the reason in the string).
  /// Set by the runtime (runtime/cuda); the planner never compiles anything itself.
  using RegisterProbe = std::function<bool(const Graph&, GroupKind, const std::vector<int>&, int* registers,
                                           int* spill_bytes, std::string* kernel)>;
  RegisterProbe measure_registers;
  /// Capability (ggml's supports_op, ONNX Runtime's GetCapability): whether the backend runs
  /// a candidate group as its own launch; a "no" carries the
  /// reason. Asked before every fused group is formed (a refused candidate is not formed, the
  /// reason is a rejection with key "backend") and for every single op (a refused op is marked
  /// to run on the host). Set by the backend (runtime/backend.h); unset: every group runs.
  /// The candidate carries kind, nodes, outputs and (cross groups) the join.
  using Capability = std::function<FusionDecision(const Graph&, const FusionGroup& candidate)>;
  Capability supports;
  /// Budget for measured registers (CUDA): 65536 registers per SM / 2048 resident threads = 32
  /// gives full occupancy on sm_90. A candidate above it, or one that spills, is split.
  int measured_register_budget = 32;
};

/// Values a node set writes to memory: produced inside and read outside, or graph outputs.
std::vector<ValueId> group_outputs(const Graph& g, const std::vector<int>& nodes);

/// Parses "none", "all" or a comma list of strategy names; errors name the bad entry.
bool parse_fusion_mode(const std::string& mode, FusionOptions* out, std::string* error);

struct FusionPlan {
  std::vector<FusionGroup> groups;  ///< kernel groups first-class; compound groups hold children
  std::vector<int> group_of_node;   ///< node index -> id of its kernel group
  std::vector<Rejection> rejected;
  std::string family;                  ///< "cnn-small", "cnn-residual", "transformer", "generic"
  std::vector<std::string> stage_log;  ///< one line per planner stage
  double plan_ms = 0;

  /// Kernel groups (non-compound), in execution order.
  std::vector<const FusionGroup*> kernel_groups() const;
  std::map<std::string, int> count_by_strategy() const;  ///< kernel + compound groups
  std::map<std::string, int> rejected_by_key() const;
  int fused_ops() const;  ///< nodes inside groups of 2+ nodes
};

}  // namespace fusert
