// --explain text, DOT export and golden dumps of a fusion plan.
#include "graph/fusion/explain.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "graph/fusion/cost_model.h"
#include "graph/fusion/legality.h"

namespace fusert {

namespace {

std::string members(const Graph& g, const FusionGroup& grp, size_t limit) {
  std::string s;
  for (size_t i = 0; i < grp.nodes.size(); ++i) {
    if (i == limit) return s + " ... (" + std::to_string(grp.nodes.size()) + " ops)";
    const Node& n = g.nodes[static_cast<size_t>(grp.nodes[i])];
    s += (i ? " + " : "") + n.name + "(" + op_name(n.op) + ")";
  }
  return s;
}

std::string mib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  return buf;
}

int depth_class(const FusionGroup& grp) { return grp.depth() <= 2 ? 0 : grp.depth() <= 4 ? 1 : 2; }

}  // namespace

double traffic_reduction(const Graph& g, const FusionGroup& grp) {
  int64_t unfused = 0;
  for (int ni : grp.nodes) {
    const Node& n = g.nodes[static_cast<size_t>(ni)];
    for (ValueId in : n.inputs)
      if (in != kNoValue && !g.value(in).is_initializer) unfused += value_bytes(g, in);
    for (ValueId out : n.outputs) unfused += value_bytes(g, out);
  }
  return unfused > 0 ? static_cast<double>(grp.bytes_saved) / static_cast<double>(unfused) : 0.0;
}

std::string explain_plan(const Graph& g, const FusionPlan& plan) {
  std::ostringstream os;
  auto kernels = plan.kernel_groups();
  int views = 0;
  for (const FusionGroup* k : kernels)
    views += k->nodes.size() == 1 && is_alias_op(g.nodes[static_cast<size_t>(k->nodes[0])].op) ? 1 : 0;
  os << "fusion plan for '" << g.name << "' (family " << plan.family << "): " << g.nodes.size() << " nodes -> "
     << kernels.size() - views << " kernels (+" << views << " views), planned in " << plan.plan_ms << " ms\n";
  for (const std::string& s : plan.stage_log) os << "  stage " << s << "\n";
  os << "groups:\n";
  for (const FusionGroup& grp : plan.groups) {
    if (grp.nodes.size() < 2 && grp.children.empty()) continue;
    char head[160];
    std::snprintf(head, sizeof head, "  #%-3d %-10s %-16s", grp.id, strategy_name(grp.strategy),
                  grp.children.empty() ? group_kind_name(grp.kind) : "region");
    os << head << members(g, grp, grp.children.empty() ? 8 : 3) << "\n";
    if (grp.children.empty()) {
      os << "         depth " << grp.depth() << " (" << pressure_class(grp.depth()) << " pressure), saved "
         << mib(grp.bytes_saved) << " (" << static_cast<int>(traffic_reduction(g, grp) * 100 + 0.5)
         << "% of its traffic), " << grp.launches_saved << " launch(es), registers ~" << grp.register_estimate;
      if (grp.registers_measured >= 0) {
        os << " (estimate); measured sm_90: " << grp.registers_measured << " registers, " << grp.spill_bytes
           << " spill bytes";
      }
      if (grp.imbalance_ratio > 0)
        os << ", branch FLOP ratio " << grp.imbalance_ratio << (grp.balanced ? " (balanced)" : "");
    } else {
      os << "         " << grp.children.size() << " kernel groups over " << grp.depth() << " ops, saved "
         << mib(grp.bytes_saved) << " and " << grp.launches_saved << " launch(es) in all";
    }
    os << "\n";
    if (!grp.note.empty()) os << "         " << grp.note << "\n";
  }
  int host = 0;
  for (const FusionGroup* k : kernels) host += k->host_reason.empty() ? 0 : 1;
  if (host > 0) {
    os << "host fallbacks (" << host << " ops the backend runs on the CPU, decided by its capability check):\n";
    for (const FusionGroup* k : kernels) {
      if (k->host_reason.empty()) continue;
      const Node& n = g.nodes[static_cast<size_t>(k->nodes[0])];
      os << "  " << n.name << "(" << op_name(n.op) << "): " << k->host_reason << "\n";
    }
  }
  os << "rejected (" << plan.rejected.size() << "):\n";
  for (const Rejection& r : plan.rejected) {
    os << "  [" << strategy_name(r.strategy) << "] " << r.reason << "  {";
    for (size_t i = 0; i < r.nodes.size() && i < 6; ++i)
      os << (i ? ", " : "") << g.nodes[static_cast<size_t>(r.nodes[i])].name;
    os << (r.nodes.size() > 6 ? ", ..." : "") << "}\n";
  }
  const char* rows[3] = {"2", "3-4", "5+"};
  const char* source[3] = {"about 50%", "about 60-70%", "about 75%+"};
  const char* pressure[3] = {"low", "medium", "high"};
  int count[3] = {0, 0, 0};
  double sum[3] = {0, 0, 0};
  for (const FusionGroup* grp : kernels) {
    if (grp->nodes.size() < 2) continue;
    int c = depth_class(*grp);
    ++count[c];
    sum[c] += traffic_reduction(g, *grp);
  }
  os << "depth table (source figures beside this model's):\n";
  os << "  fused ops | groups | traffic removed (this model) | source      | register pressure\n";
  for (int c = 0; c < 3; ++c) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-9s | %6d | %27s | %-11s | %s\n", rows[c], count[c],
                  count[c] ? (std::to_string(static_cast<int>(100 * sum[c] / count[c] + 0.5)) + "%").c_str() : "-",
                  source[c], pressure[c]);
    os << line;
  }
  return os.str();
}

std::string plan_to_dot(const Graph& g, const FusionPlan& plan) {
  auto color = [](Strategy s) {
    switch (s) {
      case Strategy::kVertical:
        return "lightblue";
      case Strategy::kHorizontal:
        return "palegreen";
      case Strategy::kCross:
        return "orange";
      case Strategy::kCompound:
        return "plum";
      default:
        return "white";
    }
  };
  std::ostringstream os;
  os << "digraph \"" << g.name
     << " plan\" {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\"];\n";
  for (const FusionGroup* grp : plan.kernel_groups()) {
    bool cluster = grp->nodes.size() > 1;
    if (cluster) {
      os << "  subgraph cluster_" << grp->id << " {\n    label=\"#" << grp->id << " " << strategy_name(grp->strategy)
         << " " << group_kind_name(grp->kind) << "\";\n    style=filled; color=" << color(grp->strategy) << ";\n";
    }
    for (int n : grp->nodes) {
      os << (cluster ? "    " : "  ") << "n" << n << " [label=\"" << g.nodes[static_cast<size_t>(n)].name << "\\n"
         << op_name(g.nodes[static_cast<size_t>(n)].op) << "\", fillcolor=white];\n";
    }
    if (cluster) os << "  }\n";
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    for (ValueId in : g.nodes[i].inputs) {
      if (in == kNoValue || g.value(in).producer < 0) continue;
      os << "  n" << g.value(in).producer << " -> n" << i << ";\n";
    }
  }
  os << "  legend [shape=note, fillcolor=white, label=\"vertical: blue\\nhorizontal: green\\ncross: orange\\ncompound: "
        "purple\"];\n}\n";
  return os.str();
}

std::string plan_dump(const Graph& g, const FusionPlan& plan) {
  std::ostringstream os;
  os << "model " << g.name << " family " << plan.family << " nodes " << g.nodes.size() << " kernels "
     << plan.kernel_groups().size() << "\n";
  for (const FusionGroup& grp : plan.groups) {
    os << "#" << grp.id << " " << strategy_name(grp.strategy) << " "
       << (grp.children.empty() ? group_kind_name(grp.kind) : "region");
    if (grp.parent >= 0) os << " parent=#" << grp.parent;
    os << " :";
    if (grp.children.empty())
      for (int n : grp.nodes) os << " " << g.nodes[static_cast<size_t>(n)].name;
    else
      for (int c : grp.children) os << " #" << c;
    os << "\n";
  }
  for (const Rejection& r : plan.rejected)
    os << "rejected " << strategy_name(r.strategy) << " " << r.key << ": " << r.reason << "\n";
  return os.str();
}

}  // namespace fusert
