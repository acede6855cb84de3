// verify_graph and topo_sort on hand-built and loaded graphs (each invariant broken once), and
// the text dump / Graphviz DOT export.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "graph/printer.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"
#include "tests/graph/graph_test_util.h"

using namespace fusert;
using fusert::test::load_ok;

namespace {

// Builds graphs directly, without the loader, so the verifier sees what a pass could produce.
struct Builder {
  Graph g;
  ValueId input(const std::string& name, Shape s) {
    ValueId id = g.add_value(name);
    Value& v = g.value(id);
    v.is_graph_input = true;
    v.shape = std::move(s);
    v.shape_known = true;
    g.inputs.push_back(id);
    return id;
  }
  void node(const std::string& name, OpKind op, std::vector<std::string> ins, const std::string& out) {
    Node n;
    n.name = name;
    n.op = op;
    for (const std::string& in : ins) n.inputs.push_back(in.empty() ? kNoValue : g.add_value(in));
    n.outputs.push_back(g.add_value(out));
    n.loc = SourceLoc{"b.yaml", static_cast<int>(g.nodes.size()) + 1, 3, ""};
    g.nodes.push_back(std::move(n));
  }
  void output(const std::string& name) { g.outputs.push_back(g.add_value(name)); }
  std::vector<std::string> order() const {
    std::vector<std::string> out;
    for (const Node& n : g.nodes) out.push_back(n.name);
    return out;
  }
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("topo_sort orders a reversed chain and keeps file order among independent nodes") {
  Builder b;
  b.input("x", {2});
  b.node("c", OpKind::kRelu, {"b"}, "c");
  b.node("b", OpKind::kRelu, {"a"}, "b");
  b.node("a", OpKind::kRelu, {"x"}, "a");
  b.node("p", OpKind::kSigmoid, {"x"}, "p");  // independent of the chain: ready at once
  b.node("q", OpKind::kAdd, {"c", "p"}, "q");
  b.output("q");
  REQUIRE(topo_sort(b.g).ok());
  // The ready set is taken lowest file index first: a (index 2) and p (3) are ready at once.
  CHECK(b.order() == std::vector<std::string>{"a", "b", "c", "p", "q"});
  // Links rebuilt: producer indices point at the new positions.
  CHECK(b.g.value(b.g.find_value("a")).producer == 0);
  CHECK(b.g.value(b.g.find_value("q")).producer == 4);
  CHECK(b.g.value(b.g.find_value("x")).consumers == std::vector<int>{0, 3});
  CHECK(b.g.value(b.g.find_value("q")).is_graph_output);
  REQUIRE(infer_shapes(b.g).ok());
  CHECK(verify_graph(b.g).ok());
  // An already sorted graph stays as it is.
  REQUIRE(topo_sort(b.g).ok());
  CHECK(b.order() == std::vector<std::string>{"a", "b", "c", "p", "q"});
}

TEST_CASE("topo_sort rejects a cycle, a double producer and an unproduced input") {
  {
    Builder b;
    b.input("x", {2});
    b.node("u", OpKind::kAdd, {"x", "w"}, "v");
    b.node("w", OpKind::kRelu, {"v"}, "w");
    Status st = topo_sort(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() == "b.yaml:1:3: the graph has a cycle through node 'u'");
  }
  {
    Builder b;
    b.input("x", {2});
    b.node("r1", OpKind::kRelu, {"x"}, "y");
    b.node("r2", OpKind::kRelu, {"x"}, "y");
    Status st = topo_sort(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() == "b.yaml:2:3: value 'y' is produced by node 'r2' but already by node 'r1'");
  }
  {
    Builder b;
    b.input("x", {2});
    b.node("r", OpKind::kAdd, {"x", "nothing"}, "y");
    Status st = topo_sort(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.message(), "b.yaml:1:3: node 'r' reads 'nothing', which no node produces"));
  }
}

TEST_CASE("verify_graph: each invariant broken once") {
  auto sorted_chain = [] {
    Builder b;
    b.input("x", {2});
    b.node("a", OpKind::kRelu, {"x"}, "a");
    b.node("b", OpKind::kRelu, {"a"}, "b");
    b.output("b");
    b.g.rebuild_links();
    REQUIRE(infer_shapes(b.g).ok());
    return b;
  };
  CHECK(verify_graph(sorted_chain().g).ok());
  {  // Out of topological order.
    Builder b = sorted_chain();
    std::swap(b.g.nodes[0], b.g.nodes[1]);
    Status st = verify_graph(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() ==
          "b.yaml:2:3: node 'b' reads 'a', which is not a graph input, an initializer, or produced by an earlier node");
  }
  {  // Arity outside the op table's range.
    Builder b = sorted_chain();
    b.g.nodes[1].inputs.push_back(b.g.find_value("x"));
    Status st = verify_graph(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() == "b.yaml:2:3: node 'b' (Relu) takes 1..1 inputs, got 2");
  }
  {  // Two producers.
    Builder b = sorted_chain();
    b.g.nodes[1].outputs[0] = b.g.find_value("a");
    Status st = verify_graph(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(contains(st.message(), "value 'a' has more than one producer (node 'b')"));
  }
  {  // A node writing a graph input.
    Builder b = sorted_chain();
    b.g.nodes[0].outputs[0] = b.g.find_value("x");
    CHECK(contains(verify_graph(b.g).message(), "value 'x' has more than one producer (node 'a')"));
  }
  {  // Output never produced.
    Builder b = sorted_chain();
    b.g.source_file = "b.yaml";
    b.g.outputs.push_back(b.g.add_value("dangling"));
    Status st = verify_graph(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.message() == "b.yaml: graph output 'dangling' is never produced");
  }
  {  // Unknown shape.
    Builder b = sorted_chain();
    b.g.value(b.g.find_value("b")).shape_known = false;
    Status st = verify_graph(b.g);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == StatusCode::kShapeMismatch);
    CHECK(st.message() == "value 'b' of node 'b' has no inferred shape");
  }
  {  // A required input left empty.
    Builder b;
    b.input("x", {2});
    b.node("s", OpKind::kSub, {"", "x"}, "y");
    b.output("y");
    Status st = verify_graph(b.g);
    CHECK(st.message() == "b.yaml:1:3: node 's': required input 0 is empty");
  }
}

TEST_CASE("infer_shapes reports an input without a known shape") {
  Builder b;
  b.input("x", {2});
  b.node("a", OpKind::kAdd, {"x", "w"}, "y");
  b.g.add_value("w");  // neither input nor initializer: no shape
  Status st = infer_shapes(b.g);
  REQUIRE_FALSE(st.ok());
  CHECK(st.message() == "b.yaml:1:3: node 'a': input 'w' has no known shape (is it produced before this node?)");
}

namespace {

const char* kPrinted = R"(fusert: 1
name: printed
inputs: [{name: x, shape: [1, 2, 4, 4]}]
outputs: [y, skip]
initializers:
  - {name: w, shape: [3, 2, 3, 3]}
  - {name: s, shape: [3, 1, 1], init: bn_scale}
  - {name: one, shape: [], value: 1}
nodes:
  - {name: conv, op: Conv, inputs: [x, w], outputs: [c], attrs: {pads: [1, 1, 1, 1]}}
  - {name: scale, op: Mul, inputs: [c, s], outputs: [m], fuse: never}
  - {name: skip, op: Relu, inputs: [x], outputs: [skip]}
  - {name: join, op: Add, inputs: [m, one], outputs: [y]}
)";

}  // namespace

TEST_CASE("dump_graph lists inputs, initializers, nodes with shapes and non-default attributes, outputs") {
  ModelSpec m = load_ok(kPrinted);
  std::string d = dump_graph(m.graph);
  INFO(d);
  std::vector<std::string> lines;
  std::istringstream is(d);
  for (std::string l; std::getline(is, l);) lines.push_back(l);
  REQUIRE(lines.size() == 1 + 1 + 3 + 4 + 2);
  CHECK(lines[0] == "graph printed (4 nodes)");
  CHECK(lines[1] == "  input  x[1, 2, 4, 4] f32");
  CHECK(lines[2] == "  weight w[3, 2, 3, 3] init=kaiming");
  CHECK(lines[3] == "  weight s[3, 1, 1] init=bn_scale");
  CHECK(lines[4] == "  const  one[]");
  CHECK(lines[5].rfind("  node   conv = Conv(x[1, 2, 4, 4], w[3, 2, 3, 3]) -> c[1, 3, 4, 4] {", 0) == 0);
  CHECK(contains(lines[5], "pads=[1, 1, 1, 1]"));
  CHECK_FALSE(contains(lines[5], "group="));     // default value: not printed
  CHECK_FALSE(contains(lines[5], "auto_pad="));  // canonical NOTSET is the default
  CHECK(lines[6] == "  node   scale = Mul(c[1, 3, 4, 4], s[3, 1, 1]) -> m[1, 3, 4, 4] fuse=never");
  CHECK(lines[7] == "  node   skip = Relu(x[1, 2, 4, 4]) -> skip[1, 2, 4, 4]");
  CHECK(lines[8] == "  node   join = Add(m[1, 3, 4, 4], one[]) -> y[1, 3, 4, 4]");
  CHECK(lines[9] == "  output y[1, 3, 4, 4]");
  CHECK(lines[10] == "  output skip[1, 2, 4, 4]");
}

TEST_CASE("graph_to_dot is a digraph with one edge per data input and per graph output") {
  ModelSpec m = load_ok(kPrinted);
  std::string dot = graph_to_dot(m.graph);
  INFO(dot);
  CHECK(dot.rfind("digraph \"printed\" {", 0) == 0);
  CHECK(std::count(dot.begin(), dot.end(), '{') == std::count(dot.begin(), dot.end(), '}'));
  CHECK(dot.substr(dot.size() - 2) == "}\n");
  // Node order after loading: conv n0, scale n1, skip n2, join n3 (file order is topological).
  CHECK(contains(dot, "n0 [label=\"conv\\nConv\"];"));
  CHECK(contains(dot, "n3 [label=\"join\\nAdd\"];"));
  CHECK(contains(dot, "\"v:x\" [shape=ellipse, label=\"x\"];"));
  // Data edges (weights and constants are not drawn): x->conv, c->scale, x->skip, m->join;
  // plus one edge into each graph output's ellipse.
  CHECK(contains(dot, "\"v:x\" -> n0 [label=\"[1, 2, 4, 4]\"];"));
  CHECK(contains(dot, "n0 -> n1 [label=\"[1, 3, 4, 4]\"];"));
  CHECK(contains(dot, "\"v:x\" -> n2 [label=\"[1, 2, 4, 4]\"];"));
  CHECK(contains(dot, "n1 -> n3 [label=\"[1, 3, 4, 4]\"];"));
  CHECK(contains(dot, "n3 -> \"v:y\";"));
  CHECK(contains(dot, "n2 -> \"v:skip\";"));
  size_t edges = 0;
  for (size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 2)) ++edges;
  CHECK(edges == 4 + 2);
  CHECK_FALSE(contains(dot, "v:w"));
  CHECK_FALSE(contains(dot, "v:one"));
}

TEST_CASE("graph_to_dot escapes quotes and backslashes in names") {
  ModelSpec m = load_ok(R"(fusert: 1
name: 'q"uote'
inputs: [{name: 'in\x', shape: [2]}]
outputs: [y]
nodes: [{name: 'r"1', op: Relu, inputs: ['in\x'], outputs: [y]}]
)");
  std::string dot = graph_to_dot(m.graph);
  INFO(dot);
  CHECK(dot.rfind("digraph \"q\\\"uote\" {", 0) == 0);
  CHECK(contains(dot, "\"v:in\\\\x\" -> n0"));
  CHECK(contains(dot, "n0 [label=\"r\\\"1\\nRelu\"];"));
}

TEST_CASE("attr_to_string formats each attribute type") {
  AttrValue i;
  i.type = AttrType::kInt;
  i.i = -3;
  CHECK(attr_to_string(i) == "-3");
  AttrValue f;
  f.type = AttrType::kFloat;
  f.f = 0.25;
  CHECK(attr_to_string(f) == "0.25");
  AttrValue is;
  is.type = AttrType::kInts;
  is.ints = {1, 2};
  CHECK(attr_to_string(is) == "[1, 2]");
  AttrValue fs;
  fs.type = AttrType::kFloats;
  fs.floats = {0.5, 2};
  CHECK(attr_to_string(fs) == "[0.5, 2]");
  AttrValue s;
  s.type = AttrType::kString;
  s.s = "SAME";
  CHECK(attr_to_string(s) == "\"SAME\"");
}

TEST_CASE("op table: names, arity and attribute schemas parsed from ops.def") {
  OpKind k;
  REQUIRE(find_op("Conv", &k));
  CHECK(k == OpKind::kConv);
  CHECK_FALSE(find_op("conv", &k));
  const OpInfo& conv = op_info(OpKind::kConv);
  CHECK(conv.min_inputs == 2);
  CHECK(conv.max_inputs == 3);
  CHECK(conv.pattern == PatternKind::kAnchor);
  REQUIRE(conv.find_attr("group"));
  CHECK(conv.find_attr("group")->default_value.i == 1);
  CHECK(conv.find_attr("auto_pad")->default_value.s == "NOTSET");
  CHECK(conv.find_attr("strides")->default_value.ints.empty());
  const OpInfo& mp = op_info(OpKind::kMaxPool);
  CHECK(mp.find_attr("kernel_shape")->required);
  CHECK(op_info(OpKind::kBatchNormalization).find_attr("epsilon")->default_value.f == 1e-5);
  CHECK(op_info(OpKind::kHardSigmoid).find_attr("alpha")->default_value.f == 0.2);
  CHECK(op_info(OpKind::kGemm).find_attr("alpha")->default_value.f == 1.0);
  CHECK(op_info(OpKind::kSoftmax).find_attr("axis")->default_value.i == -1);
  CHECK(static_cast<float>(op_info(OpKind::kClip).find_attr("max")->default_value.f) == 3.4028234663852886e38f);
  CHECK(PatternKind::kElementwise < PatternKind::kBroadcast);
  CHECK(PatternKind::kAnchor < PatternKind::kOpaque);
  CHECK(std::string(known_op_names()).rfind("Conv, BatchNormalization, Relu, ", 0) == 0);
}
