// Strategy/kind names, fusion-mode parsing and plan summaries.
#include "graph/fusion/group.h"

#include <set>
#include <sstream>

namespace fusert {

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::kNone:
      return "none";
    case Strategy::kVertical:
      return "vertical";
    case Strategy::kHorizontal:
      return "horizontal";
    case Strategy::kCross:
      return "cross";
    case Strategy::kCompound:
      return "compound";
  }
  return "?";
}

bool parse_strategy(const std::string& s, Strategy* out) {
  for (Strategy k : {Strategy::kVertical, Strategy::kHorizontal, Strategy::kCross, Strategy::kCompound}) {
    if (s == strategy_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

const char* group_kind_name(GroupKind k) {
  switch (k) {
    case GroupKind::kSingle:
      return "single";
    case GroupKind::kAnchorEpilogue:
      return "anchor+epilogue";
    case GroupKind::kElementwise:
      return "elementwise";
    case GroupKind::kRowNorm:
      return "row-norm";
    case GroupKind::kGemmLayerNorm:
      return "gemm+layernorm";
    case GroupKind::kHorizontalGemm:
      return "horizontal-gemm";
    case GroupKind::kGroupedGemm:
      return "grouped-gemm";
    case GroupKind::kGroupedRowNorm:
      return "grouped-row-norm";
    case GroupKind::kConvSum:
      return "conv-sum";
    case GroupKind::kBranchMerge:
      return "branch-merge";
    case GroupKind::kAttention:
      return "attention";
    case GroupKind::kPointwiseDepthwise:
      return "1x1+depthwise";
  }
  return "?";
}

bool parse_fusion_mode(const std::string& mode, FusionOptions* out, std::string* error) {
  out->enabled.clear();
  if (mode == "none" || mode == "raw") return true;  // raw: the session skips canonicalisation too
  if (mode == "all") {
    out->enabled = {Strategy::kVertical, Strategy::kHorizontal, Strategy::kCross, Strategy::kCompound};
    return true;
  }
  std::stringstream ss(mode);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Strategy s;
    if (!parse_strategy(item, &s)) {
      *error = "unknown fusion strategy '" + item +
               "' (all, none, raw, or a comma list of vertical, horizontal, cross, compound)";
      return false;
    }
    out->enabled.insert(s);
  }
  if (out->enabled.empty()) {
    *error = "empty fusion mode";
    return false;
  }
  return true;
}

std::vector<const FusionGroup*> FusionPlan::kernel_groups() const {
  std::vector<const FusionGroup*> out;
  for (const FusionGroup& g : groups)
    if (g.children.empty() && !g.nodes.empty()) out.push_back(&g);
  return out;
}

std::map<std::string, int> FusionPlan::count_by_strategy() const {
  std::map<std::string, int> m = {{"vertical", 0}, {"horizontal", 0}, {"cross", 0}, {"compound", 0}};
  for (const FusionGroup& g : groups) {
    if (g.strategy != Strategy::kNone && !g.nodes.empty()) ++m[strategy_name(g.strategy)];
  }
  return m;
}

std::map<std::string, int> FusionPlan::rejected_by_key() const {
  std::map<std::string, int> m;
  for (const Rejection& r : rejected) ++m[r.key];
  return m;
}

int FusionPlan::fused_ops() const {
  int n = 0;
  for (const FusionGroup* g : kernel_groups())
    if (g->nodes.size() >= 2) n += static_cast<int>(g->nodes.size());
  return n;
}

std::vector<ValueId> group_outputs(const Graph& g, const std::vector<int>& nodes) {
  std::set<int> members(nodes.begin(), nodes.end());
  std::vector<ValueId> out;
  for (int ni : nodes) {
    for (ValueId v : g.nodes[static_cast<size_t>(ni)].outputs) {
      const Value& val = g.value(v);
      bool outside = val.is_graph_output;
      for (int c : val.consumers) outside |= !members.count(c);
      if (outside) out.push_back(v);
    }
  }
  return out;
}

}  // namespace fusert
