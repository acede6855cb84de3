// Compound fusion: attention kernels, serial horizontal-of-vertical merges, block regions.
#include "graph/fusion/compound.h"

#include <algorithm>
#include <map>
#include <set>

#include "graph/fusion/attention_pattern.h"
#include "graph/fusion/horizontal.h"
#include "graph/fusion/legality.h"

namespace fusert {

namespace {

// Groups entirely inside `nodes` (to dissolve), or false if some node belongs to a group that
// reaches outside.
bool contained_groups(const PlanState& st, const std::vector<int>& nodes, std::set<int>* groups) {
  std::set<int> members(nodes.begin(), nodes.end());
  for (int n : nodes) {
    int gid = st.group_of(n);
    if (gid < 0) continue;
    for (int m : st.groups[static_cast<size_t>(gid)].nodes)
      if (!members.count(m)) return false;
    groups->insert(gid);
  }
  return true;
}

void form_attention(PlanState& st) {
  for (size_t i = 0; i < st.g.nodes.size(); ++i) {
    AttentionMatch m;
    if (!match_attention(st.g, static_cast<int>(i), &m)) continue;
    std::set<int> inner;
    if (!contained_groups(st, m.nodes, &inner)) {
      st.reject(Strategy::kCompound, m.nodes,
                refuse("claimed") << "attention around '" << st.node(static_cast<int>(i)).name
                                  << "' overlaps a group that reaches outside it");
      continue;
    }
    bool hinted = false;
    for (int n : m.nodes) hinted |= st.node(n).fuse_never;
    if (hinted) continue;
    auto decoded = std::make_shared<const AttentionMatch>(m);
    FusionGroup candidate = candidate_group(st.g, GroupKind::kAttention, m.nodes);
    candidate.attention = decoded;
    if (FusionDecision d = backend_supports(st.opt, st.g, candidate); !d) {
      st.reject(Strategy::kCompound, m.nodes, d);
      continue;
    }
    for (int gid : inner) st.dissolve(gid);
    const int id =
        st.add_group(Strategy::kCompound, GroupKind::kAttention, m.nodes,
                     "parallel: all " + std::to_string(m.heads) +
                         " heads in one launch, softmax(QK^T*scale+mask)V; [B,H,S,S] scores never reach memory");
    st.groups[static_cast<size_t>(id)].attention = decoded;
  }
}

// The op sequence a member applies after its anchor (its epilogue signature).
std::string epilogue_signature(const PlanState& st, const std::vector<int>& nodes) {
  std::string s;
  for (size_t i = 1; i < nodes.size(); ++i) s += std::string(op_name(st.node(nodes[i]).op)) + ",";
  return s;
}

// Serial compound: sibling Gemm/1x1-conv groups (vertical, or bare) reading one tensor with the
// same structure become one horizontal launch with per-member epilogues.
void form_serial(PlanState& st) {
  const Graph& g = st.g;
  for (size_t v = 0; v < g.values.size(); ++v) {
    std::map<std::string, std::vector<int>> by_sig;  // signature -> group ids or -(node+1)
    std::set<int> seen;
    for (int c : g.values[v].consumers) {
      if (st.node(c).inputs[0] != static_cast<ValueId>(v) || st.node(c).fuse_never) continue;
      std::string sig = horizontal_signature(g, c, false);
      if (sig.empty()) continue;
      int gid = st.group_of(c);
      if (gid >= 0) {
        const FusionGroup& grp = st.groups[static_cast<size_t>(gid)];
        if (grp.nodes.front() != c || grp.strategy != Strategy::kVertical || !seen.insert(gid).second) continue;
        if (grp.kind != GroupKind::kAnchorEpilogue && grp.kind != GroupKind::kGemmLayerNorm) continue;
        by_sig[sig + "|" + epilogue_signature(st, grp.nodes)].push_back(gid);
      }
    }
    for (auto& [sig, gids] : by_sig) {
      if (gids.size() < 2) continue;
      std::vector<int> nodes;
      for (int gid : gids)
        nodes.insert(nodes.end(), st.groups[static_cast<size_t>(gid)].nodes.begin(),
                     st.groups[static_cast<size_t>(gid)].nodes.end());
      if (FusionDecision d =
              first_refusal([&] { return check_no_cycle(g, nodes); },
                            [&] { return backend_supports(st.opt, g, GroupKind::kHorizontalGemm, nodes); });
          !d) {
        st.reject(Strategy::kCompound, nodes, d);
        continue;
      }
      for (int gid : gids) st.dissolve(gid);
      st.add_group(Strategy::kCompound, GroupKind::kHorizontalGemm, nodes,
                   "serial: vertical inside " + std::to_string(gids.size()) +
                       " branches, then horizontal across (shared input '" + g.values[v].name + "')");
    }
  }
}

// Adds a region (parent) over kernel groups; children keep their own kernels.
void add_region(PlanState& st, std::vector<int> children, const std::string& note) {
  std::sort(children.begin(), children.end());
  children.erase(std::unique(children.begin(), children.end()), children.end());
  if (children.size() < 2) return;
  for (int c : children)
    if (st.groups[static_cast<size_t>(c)].parent >= 0) return;
  FusionGroup parent;
  parent.id = static_cast<int>(st.groups.size());
  parent.strategy = Strategy::kCompound;
  parent.kind = GroupKind::kSingle;
  parent.children = children;
  for (int c : children) {
    const FusionGroup& ch = st.groups[static_cast<size_t>(c)];
    parent.nodes.insert(parent.nodes.end(), ch.nodes.begin(), ch.nodes.end());
    parent.bytes_saved += ch.bytes_saved;
    parent.launches_saved += ch.launches_saved;
  }
  std::sort(parent.nodes.begin(), parent.nodes.end());
  parent.name = "compound:" + st.node(parent.nodes.front()).name + "..region";
  parent.note = note;
  for (int c : children) st.groups[static_cast<size_t>(c)].parent = parent.id;
  st.groups.push_back(std::move(parent));
}

// Kernel groups whose nodes lie on paths from `from` (exclusive) to node `to` (inclusive).
std::vector<int> groups_between(const PlanState& st, ValueId from, int to) {
  const Graph& g = st.g;
  std::vector<bool> fwd(g.nodes.size(), false), bwd(g.nodes.size(), false);
  for (int c : g.value(from).consumers) fwd[static_cast<size_t>(c)] = true;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!fwd[i]) continue;
    for (ValueId o : g.nodes[i].outputs)
      for (int c : g.value(o).consumers) fwd[static_cast<size_t>(c)] = true;
  }
  bwd[static_cast<size_t>(to)] = true;
  for (size_t i = g.nodes.size(); i-- > 0;) {
    if (!bwd[i]) continue;
    for (ValueId in : g.nodes[i].inputs)
      if (in != kNoValue && g.value(in).producer >= 0) bwd[static_cast<size_t>(g.value(in).producer)] = true;
  }
  std::vector<int> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (fwd[i] && bwd[i] && st.group_of(static_cast<int>(i)) >= 0) out.push_back(st.group_of(static_cast<int>(i)));
  }
  return out;
}

// Regions: residual blocks (split .. join) and Transformer blocks (two residual joins after an
// attention kernel).
void form_regions(PlanState& st) {
  const size_t kernel_groups = st.groups.size();
  std::vector<std::pair<int, int>> joins;  // (join node, group)
  for (size_t gi = 0; gi < kernel_groups; ++gi) {
    const FusionGroup& grp = st.groups[gi];
    if (grp.nodes.empty() || grp.strategy != Strategy::kCross) continue;
    for (int n : grp.nodes)
      if (is_join(st.g, n)) joins.emplace_back(n, static_cast<int>(gi));
  }
  bool transformer = false;
  for (size_t gi = 0; gi < kernel_groups; ++gi)
    transformer |= st.groups[gi].kind == GroupKind::kAttention && !st.groups[gi].nodes.empty();
  if (transformer) {
    for (size_t gi = 0; gi < kernel_groups; ++gi) {
      const FusionGroup& att = st.groups[gi];
      if (att.kind != GroupKind::kAttention || att.nodes.empty()) continue;
      // The block: from the attention's first join after it to the second one.
      std::vector<std::pair<int, int>> after;
      for (auto& j : joins)
        if (j.first > att.nodes.back()) after.push_back(j);
      if (after.size() < 2) continue;
      ValueId split = st.node(after[0].first).inputs[0];
      for (ValueId in : st.node(after[0].first).inputs)
        if (st.group_of(st.g.value(in).producer) != after[0].second) split = in;
      add_region(st, groups_between(st, split, after[1].first),
                 "parallel: Transformer block (horizontal Q/K/V, attention, FFN, residual + LayerNorm)");
    }
    return;
  }
  for (auto& [join, gid] : joins) {
    for (ValueId in : st.node(join).inputs) {
      const Value& v = st.g.value(in);
      if (v.producer >= 0 && st.group_of(v.producer) == gid) continue;
      add_region(st, groups_between(st, in, join), "residual block: vertical chains, then cross at the join");
      break;
    }
  }
}

}  // namespace

void run_compound(PlanState& st) {
  form_attention(st);
  form_serial(st);
  form_regions(st);
}

}  // namespace fusert
