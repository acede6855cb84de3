// graph/analysis: use-def, post-dominators (diamond, residual block, dead ends) and
// reachability / cycle witnesses, plus both against brute force on random DAGs.
#include <doctest/doctest.h>

#include <functional>
#include <random>

#include "graph/analysis/post_dominators.h"
#include "graph/analysis/reachability.h"
#include "graph/analysis/use_def.h"
#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

int index_of(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (g.nodes[i].name == name) return static_cast<int>(i);
  }
  FAIL("no node " << name);
  return -1;
}

// a splits into b and c, joined by d; e follows. `extra` adds nodes, `outputs` the outputs.
std::string diamond(const std::string& extra = "", const std::string& outputs = "[e]") {
  return "fusert: 1\nname: t\ninputs: [{name: x, shape: [4]}]\noutputs: " + outputs +
         "\nnodes:\n"
         "  - {name: a, op: Relu, inputs: [x], outputs: [a]}\n"
         "  - {name: b, op: Sigmoid, inputs: [a], outputs: [b]}\n"
         "  - {name: c, op: Tanh, inputs: [a], outputs: [c]}\n"
         "  - {name: d, op: Add, inputs: [b, c], outputs: [d]}\n"
         "  - {name: e, op: Relu, inputs: [d], outputs: [e]}\n" +
         extra;
}

// ResNet basic block with a projection shortcut (conv0 -> relu0 = r0, then):
//   r0 -> conv1 -> relu1 -> conv2 --> add -> relu2
//   r0 -> proj --------------------/
const char* kResBlock = R"(fusert: 1
name: t
inputs: [{name: x, shape: [1, 4, 8, 8]}]
outputs: [out]
initializers:
  - {name: w0, shape: [4, 4, 3, 3]}
  - {name: w1, shape: [8, 4, 3, 3]}
  - {name: w2, shape: [8, 8, 3, 3]}
  - {name: wp, shape: [8, 4, 1, 1]}
nodes:
  - {name: conv0, op: Conv, inputs: [x, w0], outputs: [c0], attrs: {pads: [1, 1, 1, 1]}}
  - {name: relu0, op: Relu, inputs: [c0], outputs: [r0]}
  - {name: conv1, op: Conv, inputs: [r0, w1], outputs: [c1], attrs: {pads: [1, 1, 1, 1]}}
  - {name: relu1, op: Relu, inputs: [c1], outputs: [r1]}
  - {name: conv2, op: Conv, inputs: [r1, w2], outputs: [c2], attrs: {pads: [1, 1, 1, 1]}}
  - {name: proj, op: Conv, inputs: [r0, wp], outputs: [p]}
  - {name: add, op: Add, inputs: [c2, p], outputs: [s]}
  - {name: relu2, op: Relu, inputs: [s], outputs: [out]}
)";

// A random DAG of `n` Add/Relu nodes over one input; some results dead, some outputs.
Graph random_dag(int n, unsigned seed) {
  std::mt19937 rng(seed);
  Graph g;
  ValueId x = g.add_value("x");
  g.value(x).is_graph_input = true;
  g.inputs.push_back(x);
  std::vector<ValueId> avail{x};
  for (int i = 0; i < n; ++i) {
    Node node;
    node.name = "n" + std::to_string(i);
    // Mostly read recent values, sometimes far back: long and short edges.
    auto pick = [&]() {
      size_t k = avail.size();
      size_t back = rng() % 4 == 0 ? rng() % k : rng() % std::min<size_t>(k, 4);
      return avail[k - 1 - back];
    };
    node.op = rng() % 3 == 0 ? OpKind::kRelu : OpKind::kAdd;
    node.inputs.push_back(pick());
    if (node.op == OpKind::kAdd) node.inputs.push_back(pick());
    ValueId out = g.add_value(node.name);
    node.outputs.push_back(out);
    g.nodes.push_back(node);
    avail.push_back(out);
  }
  for (int i = n - 1; i >= 0; i -= 1 + static_cast<int>(rng() % (n / 3 + 1)))
    g.outputs.push_back(g.nodes[static_cast<size_t>(i)].outputs[0]);
  g.rebuild_links();
  return g;
}

// Successor lists with the exit as node n (a node with no reader or feeding an output has it).
std::vector<std::vector<int>> succ_with_exit(const Graph& g) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<std::vector<int>> s(static_cast<size_t>(n) + 1);
  for (int i = 0; i < n; ++i) {
    bool to_exit = false;
    for (ValueId o : g.nodes[static_cast<size_t>(i)].outputs) {
      const Value& v = g.value(o);
      to_exit = to_exit || v.is_graph_output || v.consumers.empty();
      for (int c : v.consumers) s[static_cast<size_t>(i)].push_back(c);
    }
    if (to_exit) s[static_cast<size_t>(i)].push_back(n);
  }
  return s;
}

// Can `from` reach the exit without passing through `blocked`?
bool reaches_exit_avoiding(const std::vector<std::vector<int>>& s, int from, int blocked) {
  const int exit = static_cast<int>(s.size()) - 1;
  std::vector<bool> seen(s.size(), false);
  std::function<bool(int)> dfs = [&](int v) {
    if (v == blocked || seen[static_cast<size_t>(v)]) return false;
    if (v == exit) return true;
    seen[static_cast<size_t>(v)] = true;
    for (int w : s[static_cast<size_t>(v)]) {
      if (dfs(w)) return true;
    }
    return false;
  };
  return dfs(from);
}

}  // namespace

TEST_CASE("UseDef: uses per slot, single use, distinct successors and predecessors") {
  Graph g = load_graph(diamond("  - {name: sq, op: Mul, inputs: [e, e], outputs: [sq]}\n", "[sq, d]"));
  UseDef ud(g);
  ValueId e = g.find_value("e"), a = g.find_value("a"), b = g.find_value("b"), d = g.find_value("d");
  CHECK(ud.num_uses(e) == 2);  // Mul(e, e) reads it twice
  CHECK_FALSE(ud.single_use(e));
  CHECK(ud.num_uses(a) == 2);
  CHECK(ud.single_use(b));
  CHECK_FALSE(ud.single_use(d));  // one reader, but a graph output
  CHECK(ud.producer(b) == index_of(g, "b"));
  CHECK(ud.producer(g.find_value("x")) == -1);
  CHECK(ud.successors(index_of(g, "e")) == std::vector<int>{index_of(g, "sq")});
  CHECK(ud.predecessors(index_of(g, "d")) == std::vector<int>{index_of(g, "b"), index_of(g, "c")});
  CHECK(ud.feeds_graph_output(index_of(g, "d")));
  CHECK_FALSE(ud.feeds_graph_output(index_of(g, "e")));
}

TEST_CASE("post-dominators: a diamond joins at its Add") {
  Graph g = load_graph(diamond());
  PostDominatorTree pd(g);
  const int a = index_of(g, "a"), b = index_of(g, "b"), c = index_of(g, "c"), d = index_of(g, "d"),
            e = index_of(g, "e");
  CHECK(pd.ipdom(a) == d);
  CHECK(pd.ipdom(b) == d);
  CHECK(pd.ipdom(c) == d);
  CHECK(pd.ipdom(d) == e);
  CHECK(pd.ipdom(e) == PostDominatorTree::kExit);
  CHECK(pd.post_dominates(e, a));
  CHECK(pd.post_dominates(a, a));
  CHECK_FALSE(pd.post_dominates(b, a));
  CHECK_FALSE(pd.post_dominates(a, e));
}

TEST_CASE("post-dominators: a branch that escapes to a graph output or dead-ends joins only at the exit") {
  for (auto [extra, outputs] : {std::pair<std::string, std::string>{"", "[e, b]"},
                                {"  - {name: dead, op: Relu, inputs: [b], outputs: [z]}\n", "[e]"}}) {
    INFO(extra << outputs);
    Graph g = load_graph(diamond(extra, outputs));
    PostDominatorTree pd(g);
    CHECK(pd.ipdom(index_of(g, "a")) == PostDominatorTree::kExit);
    CHECK(pd.ipdom(index_of(g, "b")) == PostDominatorTree::kExit);
    CHECK(pd.ipdom(index_of(g, "c")) == index_of(g, "d"));
  }
}

TEST_CASE("post-dominators: a ResNet block's split joins at the residual Add") {
  Graph g = load_graph(kResBlock);
  PostDominatorTree pd(g);
  const int relu0 = index_of(g, "relu0"), add = index_of(g, "add");
  CHECK(pd.ipdom(relu0) == add);
  CHECK(pd.ipdom(index_of(g, "conv1")) == index_of(g, "relu1"));
  CHECK(pd.ipdom(index_of(g, "proj")) == add);
  CHECK(pd.ipdom(index_of(g, "conv0")) == relu0);
  CHECK(pd.post_dominates(add, index_of(g, "conv1")));
  CHECK_FALSE(pd.post_dominates(index_of(g, "conv2"), relu0));
}

TEST_CASE("reachability: paths, and the cycle a merge would create") {
  Graph g = load_graph(kResBlock);
  Reachability r(g);
  const int relu0 = index_of(g, "relu0"), conv1 = index_of(g, "conv1"), relu1 = index_of(g, "relu1"),
            conv2 = index_of(g, "conv2"), proj = index_of(g, "proj"), add = index_of(g, "add");
  CHECK(r.reaches(relu0, add));
  CHECK(r.reaches(conv1, conv2));
  CHECK_FALSE(r.reaches(add, relu0));
  CHECK_FALSE(r.reaches(conv1, proj));  // sibling branches
  CHECK_FALSE(r.reaches(conv1, conv1));
  // Merging relu0 with add would need the branches inside: conv1 is the lowest witness.
  CHECK(r.cycle_witness({relu0, add}) == conv1);
  CHECK(r.merge_creates_cycle(relu0, add));
  CHECK(r.cycle_witness({conv1, conv2}) == relu1);
  CHECK_FALSE(r.merge_creates_cycle(conv1, relu1));  // a direct edge
  CHECK_FALSE(r.merge_creates_cycle(conv1, proj));   // independent siblings
  CHECK(r.cycle_witness({relu0, conv1, relu1, conv2, proj, add}) == -1);
  CHECK(r.cycle_witness({conv2, proj, add}) == -1);  // the join of both branches
}

TEST_CASE("analysis against brute force on random DAGs (crossing the 64-bit word boundary)") {
  for (unsigned seed : {1u, 2u, 3u}) {
    Graph g = random_dag(150, seed);
    const int n = static_cast<int>(g.nodes.size());
    Reachability r(g);
    PostDominatorTree pd(g);
    auto s = succ_with_exit(g);
    for (int a = 0; a < n; ++a) {
      // Reachability: DFS over node successors.
      std::vector<bool> seen(static_cast<size_t>(n), false);
      std::vector<int> stack{a};
      while (!stack.empty()) {
        int v = stack.back();
        stack.pop_back();
        for (int w : s[static_cast<size_t>(v)]) {
          if (w < n && !seen[static_cast<size_t>(w)]) {
            seen[static_cast<size_t>(w)] = true;
            stack.push_back(w);
          }
        }
      }
      for (int b = 0; b < n; ++b) {
        if (r.reaches(a, b) != seen[static_cast<size_t>(b)])
          FAIL("seed " << seed << " reaches(" << a << ", " << b << ")");
      }
      // ipdom: p post-dominates a (blocking p cuts a from the exit), and every other
      // post-dominator of a also post-dominates p.
      int p = pd.ipdom(a);
      if (p != PostDominatorTree::kExit && reaches_exit_avoiding(s, a, p))
        FAIL("seed " << seed << " ipdom(" << a << ") = " << p);
      for (int q = a + 1; q < n; ++q) {
        bool q_pdoms_a = !reaches_exit_avoiding(s, a, q);
        if (q_pdoms_a != pd.post_dominates(q, a)) FAIL("seed " << seed << " post_dominates(" << q << ", " << a << ")");
        if (q_pdoms_a && q != p && (p == PostDominatorTree::kExit || reaches_exit_avoiding(s, p, q))) {
          FAIL("seed " << seed << " ipdom(" << a << ") = " << p << " is not the nearest: " << q);
        }
      }
    }
  }
}
