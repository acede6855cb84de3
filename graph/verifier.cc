// Graph verification and topological ordering.
#include "graph/verifier.h"

#include <queue>

namespace fusert {

static bool is_source(const Value& v) { return v.is_graph_input || v.is_initializer; }

Status verify_graph(const Graph& g) {
  if (g.outputs.empty()) {
    return error(StatusCode::kInvalidArgument)
           << (g.source_file.empty() ? g.name : g.source_file) << ": the graph has no outputs (nothing to compute)";
  }
  std::vector<int> producer(g.values.size(), -1);
  std::vector<bool> available(g.values.size(), false);
  for (size_t i = 0; i < g.values.size(); ++i) available[i] = is_source(g.values[i]);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    const Node& n = g.nodes[ni];
    const OpInfo& info = op_info(n.op);
    int count = static_cast<int>(n.inputs.size());
    if (count < info.min_inputs || count > info.max_inputs) {
      return error(StatusCode::kInvalidArgument)
             << n.loc.str() << ": node '" << n.name << "' (" << info.name << ") takes " << info.min_inputs << ".."
             << info.max_inputs << " inputs, got " << count;
    }
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      ValueId in = n.inputs[k];
      if (in == kNoValue) {
        if (static_cast<int>(k) < info.min_inputs) {
          return error(StatusCode::kInvalidArgument)
                 << n.loc.str() << ": node '" << n.name << "': required input " << k << " is empty";
        }
        continue;
      }
      if (!available[static_cast<size_t>(in)]) {
        return error(StatusCode::kInvalidArgument)
               << n.loc.str() << ": node '" << n.name << "' reads '" << g.value(in).name
               << "', which is not a graph input, an initializer, or produced by an earlier node";
      }
    }
    for (ValueId out : n.outputs) {
      if (producer[static_cast<size_t>(out)] >= 0 || is_source(g.value(out))) {
        return error(StatusCode::kInvalidArgument) << n.loc.str() << ": value '" << g.value(out).name
                                                   << "' has more than one producer (node '" << n.name << "')";
      }
      producer[static_cast<size_t>(out)] = static_cast<int>(ni);
      available[static_cast<size_t>(out)] = true;
      if (!g.value(out).shape_known) {
        return error(StatusCode::kShapeMismatch)
               << "value '" << g.value(out).name << "' of node '" << n.name << "' has no inferred shape";
      }
    }
  }
  for (ValueId o : g.outputs) {
    if (!available[static_cast<size_t>(o)]) {
      return error(StatusCode::kInvalidArgument)
             << g.source_file << ": graph output '" << g.value(o).name << "' is never produced";
    }
  }
  return Status();
}

Status topo_sort(Graph& g) {
  std::vector<int> producer(g.values.size(), -1);
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (ValueId out : g.nodes[ni].outputs) {
      if (producer[static_cast<size_t>(out)] >= 0 || g.value(out).is_graph_input || g.value(out).is_initializer) {
        return error(StatusCode::kInvalidArgument)
               << g.nodes[ni].loc.str() << ": value '" << g.value(out).name << "' is produced by node '"
               << g.nodes[ni].name << "' but already "
               << (producer[static_cast<size_t>(out)] >= 0
                       ? "by node '" + g.nodes[static_cast<size_t>(producer[static_cast<size_t>(out)])].name + "'"
                       : std::string("a graph input or initializer"));
      }
      producer[static_cast<size_t>(out)] = static_cast<int>(ni);
    }
  }
  std::vector<int> indegree(g.nodes.size(), 0);
  std::vector<std::vector<int>> users(g.nodes.size());
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (ValueId in : g.nodes[ni].inputs) {
      if (in == kNoValue) continue;
      const Value& v = g.value(in);
      int p = producer[static_cast<size_t>(in)];
      if (p < 0 && !is_source(v)) {
        return error(StatusCode::kInvalidArgument)
               << g.nodes[ni].loc.str() << ": node '" << g.nodes[ni].name << "' reads '" << v.name
               << "', which no node produces and is neither a graph input nor an initializer";
      }
      if (p >= 0) {
        ++indegree[ni];
        users[static_cast<size_t>(p)].push_back(static_cast<int>(ni));
      }
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;  // lowest file index first
  for (size_t ni = 0; ni < g.nodes.size(); ++ni)
    if (indegree[ni] == 0) ready.push(static_cast<int>(ni));
  std::vector<int> order;
  while (!ready.empty()) {
    int n = ready.top();
    ready.pop();
    order.push_back(n);
    for (int u : users[static_cast<size_t>(n)])
      if (--indegree[static_cast<size_t>(u)] == 0) ready.push(u);
  }
  if (order.size() != g.nodes.size()) {
    for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
      if (indegree[ni] > 0) {
        return error(StatusCode::kInvalidArgument)
               << g.nodes[ni].loc.str() << ": the graph has a cycle through node '" << g.nodes[ni].name << "'";
      }
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(order.size());
  for (int n : order) sorted.push_back(std::move(g.nodes[static_cast<size_t>(n)]));
  g.nodes = std::move(sorted);
  g.rebuild_links();
  return Status();
}

}  // namespace fusert
