// Descendant bitsets filled in reverse topological order:
//   reach(a) = union over successors s of ({s} | reach(s)).
#include "graph/analysis/reachability.h"

#include "graph/analysis/use_def.h"

namespace fusert {

Reachability::Reachability(const Graph& g)
    : n_(static_cast<int>(g.nodes.size())), words_((g.nodes.size() + 63) / 64), bits_(words_ * g.nodes.size(), 0) {
  UseDef ud(g);
  for (int a = n_ - 1; a >= 0; --a) {
    uint64_t* ra = &bits_[static_cast<size_t>(a) * words_];
    for (int s : ud.successors(a)) {
      FUSERT_CHECK(s > a) << "Reachability needs a topologically ordered graph (node "
                          << g.nodes[static_cast<size_t>(s)].name << ")";
      ra[static_cast<size_t>(s) / 64] |= uint64_t{1} << (s % 64);
      const uint64_t* rs = row(s);
      for (size_t w = 0; w < words_; ++w) ra[w] |= rs[w];
    }
  }
}

bool Reachability::reaches(int a, int b) const { return (row(a)[static_cast<size_t>(b) / 64] >> (b % 64)) & 1; }

int Reachability::cycle_witness(const std::vector<int>& group) const {
  std::vector<uint64_t> in_group(words_, 0), below(words_, 0);
  for (int a : group) in_group[static_cast<size_t>(a) / 64] |= uint64_t{1} << (a % 64);
  for (int a : group) {
    const uint64_t* ra = row(a);
    for (size_t w = 0; w < words_; ++w) below[w] |= ra[w];
  }
  for (size_t w = 0; w < words_; ++w) {
    uint64_t outside = below[w] & ~in_group[w];
    while (outside) {
      int x = static_cast<int>(w * 64) + __builtin_ctzll(outside);
      outside &= outside - 1;
      const uint64_t* rx = row(x);
      for (size_t k = 0; k < words_; ++k) {
        if (rx[k] & in_group[k]) return x;
      }
    }
  }
  return -1;
}

}  // namespace fusert
