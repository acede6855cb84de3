// constant_folding: chains of data-movement and arithmetic ops over constants become one
// constant; values checked by hand, and the graph's output before and after agree.
#include <doctest/doctest.h>

#include "tests/passes/passes_test_util.h"

using namespace fusert;
using namespace fusert::test;

namespace {

// A model with inputs x [1] f32 and xs [16] f32; `body` (initializer and node entries under
// "nodes:") computes value `k` from constants, and `use` reads it together with a graph input:
//   f32 k: y = Add(k, x);  i64 k: y = Gather(xs, k);  bool k: y = Where(k, x, x).
std::string model(const std::string& inits, const std::string& nodes, const std::string& use) {
  return "fusert: 1\nname: t\ninputs: [{name: x, shape: [1]}, {name: xs, shape: [16]}]\noutputs: [y]\n"
         "initializers:\n" +
         inits + "nodes:\n" + nodes + "  - " + use + "\n";
}
const char* kUseF32 = "{name: use, op: Add, inputs: [k, x], outputs: [y]}";
const char* kUseI64 = "{name: use, op: Gather, inputs: [xs, k], outputs: [y]}";
const char* kUseBool = "{name: use, op: Where, inputs: [k, x, x], outputs: [y]}";

// Folds, then requires that only the `use` node is left, that k is a constant of `shape`, and
// that the output matches the unfolded graph's (`compare`: the CPU runtime runs the unfolded
// ops; its binary ops are f32 only).
Graph fold(const std::string& yaml, const Shape& shape, bool compare = true) {
  Graph g = load_graph(yaml);
  Graph before = g;
  auto in = seeded_inputs(g);
  auto ref = compare ? run_graph(before, in) : std::map<std::string, Tensor>{};
  CHECK(run_pass(make_constant_folding_pass(), g));
  CHECK(g.nodes.size() == 1);
  const Value& k = value_named(g, "k");
  CHECK((k.is_initializer && k.is_constant && k.shape_known && !k.data.empty()));
  CHECK(k.shape == shape);
  CHECK(k.data.shape() == shape);
  auto out = run_graph(g, in);
  if (compare) check_same_outputs(ref, out, 0.0);
  return g;
}

std::vector<float> f32s(const Graph& g, const char* name) {
  const Tensor& t = value_named(g, name).data;
  REQUIRE(t.dtype() == DType::kF32);
  return std::vector<float>(t.f32(), t.f32() + t.numel());
}

std::vector<int64_t> i64s(const Graph& g, const char* name) {
  const Tensor& t = value_named(g, name).data;
  REQUIRE(t.dtype() == DType::kI64);
  return std::vector<int64_t>(t.i64(), t.i64() + t.numel());
}

const char* kMatrix = "  - {name: m, shape: [2, 3], value: [0, 1, 2, 3, 4, 5]}\n";

}  // namespace

TEST_CASE("constant_folding: a Reshape -> Unsqueeze -> Cast -> Cast chain becomes one constant") {
  std::string yaml = model(R"(  - {name: c, shape: [6], value: [1.5, -2.5, 3, 4, 5, 6.9]}
  - {name: shp, shape: [2], dtype: i64, value: [2, 3]}
  - {name: ax, shape: [1], dtype: i64, value: [0]}
)",
                           R"(  - {name: r, op: Reshape, inputs: [c, shp], outputs: [c2]}
  - {name: u, op: Unsqueeze, inputs: [c2, ax], outputs: [c3]}
  - {name: to_i64, op: Cast, inputs: [c3], outputs: [c4], attrs: {to: 7}}
  - {name: to_f32, op: Cast, inputs: [c4], outputs: [k], attrs: {to: 1}}
)",
                           kUseF32);
  Graph g = fold(yaml, {1, 2, 3});
  // Float to integer truncates toward zero.
  CHECK(f32s(g, "k") == std::vector<float>{1, -2, 3, 4, 5, 6});
  CHECK(g.nodes[0].name == "use");
}

TEST_CASE("constant_folding: Transpose, Flatten and Identity") {
  Graph g = fold(model(kMatrix, "  - {name: t, op: Transpose, inputs: [m], outputs: [k]}\n", kUseF32), {3, 2});
  CHECK(f32s(g, "k") == std::vector<float>{0, 3, 1, 4, 2, 5});
  // perm [1, 2, 0] on [2, 1, 3]: Y[a, b, c] = X[c, a, b].
  g = fold(model("  - {name: m, shape: [2, 1, 3], value: [0, 1, 2, 3, 4, 5]}\n",
                 "  - {name: t, op: Transpose, inputs: [m], outputs: [t1], attrs: {perm: [1, 2, 0]}}\n"
                 "  - {name: f, op: Flatten, inputs: [t1], outputs: [t2], attrs: {axis: 2}}\n"
                 "  - {name: i, op: Identity, inputs: [t2], outputs: [k]}\n",
                 kUseF32),
           {3, 2});
  CHECK(f32s(g, "k") == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("constant_folding: Concat, Slice (negative step) and Gather") {
  Graph g = fold(model(std::string(kMatrix) + "  - {name: n, shape: [2, 1], value: [9, 8]}\n",
                       "  - {name: c, op: Concat, inputs: [n, m, n], outputs: [k], attrs: {axis: -1}}\n", kUseF32),
                 {2, 5});
  CHECK(f32s(g, "k") == std::vector<float>{9, 0, 1, 2, 9, 8, 3, 4, 5, 8});
  // Reverse each row: starts -1, ends below the start of the axis, step -1.
  g = fold(model(std::string(kMatrix) + R"(  - {name: st, shape: [1], dtype: i64, value: [-1]}
  - {name: en, shape: [1], dtype: i64, value: [-100]}
  - {name: ax, shape: [1], dtype: i64, value: [1]}
  - {name: sp, shape: [1], dtype: i64, value: [-1]}
)",
                 "  - {name: s, op: Slice, inputs: [m, st, en, ax, sp], outputs: [k]}\n", kUseF32),
           {2, 3});
  CHECK(f32s(g, "k") == std::vector<float>{2, 1, 0, 5, 4, 3});
  // Elements 1.. with step 2 of a [5] vector, axes omitted (""): [1, 3].
  g = fold(model(R"(  - {name: v, shape: [5], value: [0, 1, 2, 3, 4]}
  - {name: st, shape: [1], dtype: i64, value: [1]}
  - {name: en, shape: [1], dtype: i64, value: [5]}
  - {name: sp, shape: [1], dtype: i64, value: [2]}
)",
                 "  - {name: s, op: Slice, inputs: [v, st, en, '', sp], outputs: [k]}\n", kUseF32),
           {2});
  CHECK(f32s(g, "k") == std::vector<float>{1, 3});
  // Gather along axis 1 with a negative index: columns 2 and 0.
  g = fold(model(std::string(kMatrix) + "  - {name: idx, shape: [2], dtype: i64, value: [2, -3]}\n",
                 "  - {name: gt, op: Gather, inputs: [m, idx], outputs: [k], attrs: {axis: 1}}\n", kUseF32),
           {2, 2});
  CHECK(f32s(g, "k") == std::vector<float>{2, 0, 5, 3});
}

TEST_CASE("constant_folding: broadcast arithmetic, Pow and Sqrt in f32") {
  // ((m + [10, 20, 30]) * [[1], [-1]] - 1) / 2, then Pow 2 and Sqrt: |(m + row) * sign - 1| / 2.
  Graph g = fold(model(std::string(kMatrix) + R"(  - {name: row, shape: [3], value: [10, 20, 30]}
  - {name: sign, shape: [2, 1], value: [1, -1]}
  - {name: one, shape: [], value: 1}
  - {name: two, shape: [1], value: 2}
)",
                       R"(  - {name: a, op: Add, inputs: [m, row], outputs: [a]}
  - {name: b, op: Mul, inputs: [sign, a], outputs: [b]}
  - {name: c, op: Sub, inputs: [b, one], outputs: [c]}
  - {name: d, op: Div, inputs: [c, two], outputs: [d]}
  - {name: e, op: Pow, inputs: [d, two], outputs: [e]}
  - {name: f, op: Sqrt, inputs: [e], outputs: [k]}
)",
                       kUseF32),
                 {2, 3});
  CHECK(f32s(g, "k") == std::vector<float>{4.5f, 10, 15.5f, 7, 12.5f, 18});
}

TEST_CASE("constant_folding: i64 shape arithmetic and casts to bool") {
  // (dims * 2 - 1) / 2 with truncating division: [3, 5, 7] -> [2, 4, 6].
  Graph g = fold(model(R"(  - {name: dims, shape: [3], dtype: i64, value: [3, 5, 7]}
  - {name: two, shape: [1], dtype: i64, value: [2]}
  - {name: one, shape: [], dtype: i64, value: 1}
)",
                       R"(  - {name: a, op: Mul, inputs: [dims, two], outputs: [a]}
  - {name: b, op: Sub, inputs: [a, one], outputs: [b]}
  - {name: c, op: Div, inputs: [b, two], outputs: [k]}
)",
                       kUseI64),
                 {3}, false);
  CHECK(i64s(g, "k") == std::vector<int64_t>{2, 4, 6});
  g = fold(model("  - {name: v, shape: [3], value: [0, -0.5, 2]}\n",
                 "  - {name: c, op: Cast, inputs: [v], outputs: [k], attrs: {to: 9}}\n", kUseBool),
           {3});
  const Tensor& k = value_named(g, "k").data;
  REQUIRE(k.dtype() == DType::kBool);
  const auto* b = static_cast<const uint8_t*>(k.raw());
  CHECK(std::vector<int>(b, b + 3) == std::vector<int>{0, 1, 1});
}

TEST_CASE("constant_folding: folds bound weights too, but never reads a graph input") {
  std::string yaml =
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2, 3]}]\noutputs: [y]\ninitializers:\n"
      "  - {name: w, shape: [3, 2]}\n"
      "nodes:\n  - {name: t, op: Transpose, inputs: [w], outputs: [wt]}\n"
      "  - {name: s, op: Sqrt, inputs: [x], outputs: [sx]}\n"
      "  - {name: add, op: Add, inputs: [sx, wt], outputs: [y]}\n";
  Graph g = load_graph(yaml);
  const Tensor w = value_named(g, "w").data;
  CHECK(run_pass(make_constant_folding_pass(), g));
  CHECK(g.nodes.size() == 2);
  CHECK(find_node(g, "s"));  // Sqrt(x) reads a graph input: kept
  CHECK_FALSE(find_node(g, "t"));
  const Tensor& wt = value_named(g, "wt").data;
  CHECK(wt.f32()[1] == w.f32()[2]);  // wt[0, 1] = w[1, 0]
}

TEST_CASE("constant_folding: leaves graph outputs, unbound weights and huge results alone") {
  SUBCASE("the folded value would be a graph output") {
    std::string yaml = model(kMatrix, "  - {name: t, op: Transpose, inputs: [m], outputs: [k]}\n", kUseF32);
    yaml.replace(yaml.find("outputs: [y]"), 12, "outputs: [y, k]");
    Graph g = load_graph(yaml);
    CHECK_FALSE(run_pass(make_constant_folding_pass(), g));
    CHECK(find_node(g, "t"));
  }
  SUBCASE("unbound weights are not constants") {
    auto r = load_model_from_string(
        model("  - {name: w, shape: [2, 3]}\n", "  - {name: t, op: Transpose, inputs: [w], outputs: [k]}\n", kUseF32),
        "t.yaml");
    REQUIRE(r.ok());
    CHECK_FALSE(run_pass(make_constant_folding_pass(), r.value().graph));
  }
  SUBCASE("more than 16M elements stay a node; exactly 16M fold") {
    for (int64_t rows : {4096, 4097}) {
      std::string dims = "[" + std::to_string(rows) + ", 4096]";
      auto r = load_model_from_string(model("  - {name: w, shape: " + dims + "}\n",
                                            "  - {name: i, op: Identity, inputs: [w], outputs: [k]}\n", kUseF32),
                                      "t.yaml");
      REQUIRE(r.ok());
      Graph& g = r.value().graph;
      Value& w = g.value(g.find_value("w"));
      w.data = Tensor(DType::kF32, w.shape);
      CHECK(run_pass(make_constant_folding_pass(), g) == (rows == 4096));
    }
  }
  SUBCASE("integer division by zero and unsupported ops stay nodes") {
    Graph g = load_graph(model(R"(  - {name: a, shape: [2], dtype: i64, value: [1, 0]}
  - {name: z, shape: [2], dtype: i64, value: [1, 0]}
  - {name: v, shape: [1, 3], value: [1, 2, 3]}
)",
                               R"(  - {name: d, op: Div, inputs: [a, z], outputs: [k]}
  - {name: sm, op: Softmax, inputs: [v], outputs: [p]}
  - {name: use2, op: Add, inputs: [p, x], outputs: [y2]}
)",
                               kUseI64));
    CHECK_FALSE(run_pass(make_constant_folding_pass(), g));
    CHECK(g.nodes.size() == 4);
  }
}
