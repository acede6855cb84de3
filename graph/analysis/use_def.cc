// Use-def construction from the node lists.
#include "graph/analysis/use_def.h"

#include <algorithm>

namespace fusert {

namespace {
void sort_unique(std::vector<int>& v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
}
}  // namespace

UseDef::UseDef(const Graph& g)
    : uses_(g.values.size()),
      producer_(g.values.size(), -1),
      is_output_(g.values.size(), false),
      succ_(g.nodes.size()),
      pred_(g.nodes.size()),
      feeds_output_(g.nodes.size(), false) {
  for (ValueId o : g.outputs) is_output_[static_cast<size_t>(o)] = true;
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (ValueId out : g.nodes[ni].outputs) {
      producer_[static_cast<size_t>(out)] = static_cast<int>(ni);
      if (is_output_[static_cast<size_t>(out)]) feeds_output_[ni] = true;
    }
  }
  for (size_t ni = 0; ni < g.nodes.size(); ++ni) {
    for (ValueId in : g.nodes[ni].inputs) {
      if (in == kNoValue) continue;
      uses_[static_cast<size_t>(in)].push_back(static_cast<int>(ni));
      int p = producer_[static_cast<size_t>(in)];
      if (p >= 0) {
        pred_[ni].push_back(p);
        succ_[static_cast<size_t>(p)].push_back(static_cast<int>(ni));
      }
    }
  }
  for (auto& s : succ_) sort_unique(s);
  for (auto& p : pred_) sort_unique(p);
}

bool UseDef::single_use(ValueId v) const { return uses(v).size() == 1 && !is_output_[static_cast<size_t>(v)]; }

}  // namespace fusert
