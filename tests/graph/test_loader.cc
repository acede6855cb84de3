// YAML loader, accepted input: top-level metadata, templates with parameters, ${expr}
// arithmetic, repeat/start/chain, nested templates and the string -> int/float/string typing of
// substituted values (models/FORMAT.md).
#include <doctest/doctest.h>

#include <string>

#include "graph/ir.h"
#include "tests/graph/graph_test_util.h"

using namespace fusert;
using fusert::test::input_names;
using fusert::test::load_ok;
using fusert::test::node_of;
using fusert::test::value_of;

TEST_CASE("loader reads metadata, inputs, initializers and a node") {
  ModelSpec m = load_ok(R"(fusert: 1
name: tiny
description: a tiny model
labels: labels.txt
weights: w/tiny.safetensors
weights_fetch: "python3 make.py"
preprocess: {resize: 8, crop: 6, divisor: 2.0, mean: [1, 2, 3], std: [4, 5, 6], color: BGR}
inputs:
  - {name: x, shape: [1, 3, 8, 8]}
  - {name: ids, shape: [2], dtype: i64}
outputs: [y]
initializers:
  - {name: w, shape: [4, 3, 1, 1]}
  - {name: s, shape: [4], init: bn_scale}
  - {name: c, shape: [2], dtype: i64, value: [7, -3]}
  - {name: f, shape: [3], value: [0.5, -2, 1e-3]}
nodes:
  - {name: conv, op: Conv, inputs: [x, w], outputs: [y], attrs: {kernel_shape: [1, 1]}, fuse: never}
)");
  const Graph& g = m.graph;
  CHECK(g.name == "tiny");
  CHECK(m.description == "a tiny model");
  CHECK(m.labels_path == "labels.txt");  // relative to base_dir ".", normalised
  CHECK(m.weights_path == "w/tiny.safetensors");
  CHECK(m.weights_fetch == "python3 make.py");
  CHECK(m.preprocess.present);
  CHECK(m.preprocess.resize == 8);
  CHECK(m.preprocess.crop == 6);
  CHECK(m.preprocess.divisor == 2.0);
  CHECK(m.preprocess.mean == std::vector<double>{1, 2, 3});
  CHECK(m.preprocess.std == std::vector<double>{4, 5, 6});
  CHECK(m.preprocess.color == "BGR");

  REQUIRE(g.inputs.size() == 2);
  CHECK(g.value(g.inputs[0]).name == "x");
  CHECK(g.value(g.inputs[0]).shape == Shape{1, 3, 8, 8});
  CHECK(g.value(g.inputs[0]).dtype == DType::kF32);
  CHECK(g.value(g.inputs[1]).dtype == DType::kI64);
  CHECK(g.value(g.inputs[1]).is_graph_input);

  const Value& w = value_of(g, "w");
  CHECK(w.is_initializer);
  CHECK_FALSE(w.is_constant);
  CHECK(w.init == InitKind::kKaiming);  // rank >= 2 default
  CHECK(value_of(g, "s").init == InitKind::kBnScale);
  const Value& c = value_of(g, "c");
  CHECK(c.is_constant);
  REQUIRE(c.data.dtype() == DType::kI64);
  CHECK(c.data.i64()[0] == 7);
  CHECK(c.data.i64()[1] == -3);
  const Value& f = value_of(g, "f");
  CHECK(f.init == InitKind::kUniform);  // rank <= 1 default
  REQUIRE(f.data.dtype() == DType::kF32);
  CHECK(f.data.f32()[0] == 0.5f);
  CHECK(f.data.f32()[1] == -2.0f);
  CHECK(f.data.f32()[2] == 1e-3f);

  REQUIRE(g.nodes.size() == 1);
  const Node& n = g.nodes[0];
  CHECK(n.op == OpKind::kConv);
  CHECK(n.fuse_never);
  CHECK(n.loc.file == "t.yaml");
  CHECK(n.loc.line == 18);
  CHECK(n.loc.column == 5);
  CHECK(n.attr_i("group") == 1);  // default filled in
  REQUIRE(g.outputs.size() == 1);
  CHECK(g.value(g.outputs[0]).is_graph_output);
  CHECK(g.value(g.outputs[0]).shape == Shape{1, 4, 8, 8});
}

TEST_CASE("loader resolves relative paths against base_dir, absolute ones unchanged") {
  auto r = load_model_from_string(R"(fusert: 1
name: p
labels: /abs/labels.txt
weights: rel.safetensors
inputs: [{name: x, shape: [2]}]
outputs: [y]
nodes: [{name: r, op: Relu, inputs: [x], outputs: [y]}]
)",
                                  "p.yaml", "/models/dir");
  REQUIRE(r.ok());
  CHECK(r->labels_path == "/abs/labels.txt");
  CHECK(r->weights_path == "/models/dir/rel.safetensors");
  CHECK(r->path == "p.yaml");
}

TEST_CASE("template with parameters expands initializers and nodes with typed attributes") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [1, 3, 16, 16]}]
outputs: [out]
templates:
  conv_act:
    params: [name, x, y, cin, cout, k, s, alpha, mode]
    initializers:
      - {name: "${name}.weight", shape: ["${cout}", "${cin}", "${k}", "${k}"]}
      - {name: "${name}.bias", shape: ["${cout}"], init: zeros}
    nodes:
      - {name: "${name}", op: Conv, inputs: ["${x}", "${name}.weight", "${name}.bias"], outputs: ["${name}.y"],
         attrs: {kernel_shape: ["${k}", "${k}"], strides: ["${s}", "${s}"], auto_pad: "${mode}", group: "${cin / 3}"}}
      - {name: "${name}.act", op: HardSigmoid, inputs: ["${name}.y"], outputs: ["${y}"], attrs: {alpha: "${alpha}", beta: "${k}"}}
nodes:
  - use: conv_act
    args: {name: stem, x: x, y: out, cin: 3, cout: 8, k: 3, s: 2, alpha: 0.25, mode: SAME_UPPER}
)");
  const Graph& g = m.graph;
  REQUIRE(g.nodes.size() == 2);
  CHECK(value_of(g, "stem.weight").shape == Shape{8, 3, 3, 3});
  CHECK(value_of(g, "stem.bias").shape == Shape{8});
  CHECK(value_of(g, "stem.bias").init == InitKind::kZeros);
  const Node& conv = node_of(g, "stem");
  CHECK(input_names(g, conv) == std::vector<std::string>{"x", "stem.weight", "stem.bias"});
  // "${k}" alone becomes an int, so the ints attribute is typed (not a string).
  CHECK(conv.attrs.at("strides").type == AttrType::kInts);
  CHECK(conv.attr_ints("strides") == std::vector<int64_t>{2, 2});
  CHECK(conv.attr_ints("kernel_shape") == std::vector<int64_t>{3, 3});
  CHECK(conv.attr_i("group") == 1);
  // SAME_UPPER for in 16, k 3, s 2: out 8, total pad (8-1)*2+3-16 = 1 -> [0, 0, 1, 1].
  CHECK(conv.attr_ints("pads") == std::vector<int64_t>{0, 0, 1, 1});
  CHECK(conv.attr_s("auto_pad") == "SAME_UPPER");
  const Node& act = node_of(g, "stem.act");
  CHECK(act.attr_f("alpha") == 0.25);
  CHECK(act.attr_f("beta") == 3.0);  // an int where a float is expected is accepted
  CHECK(value_of(g, "out").shape == Shape{1, 8, 8, 8});
  // Nodes from a template name their use site.
  CHECK(conv.loc.line == 12);
  CHECK(conv.loc.via == "template 'conv_act' used at t.yaml:16:5");
  CHECK(conv.loc.str() == "t.yaml:12:9 (template 'conv_act' used at t.yaml:16:5)");
}

TEST_CASE("${expr} integer arithmetic: + - * / % parentheses, unary minus, inside longer strings") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [2]}]
outputs: [y]
templates:
  shapes:
    params: [c, d]
    initializers:
      - {name: "a${c + 1}", shape: ["${c * 2 + 1}", "${(c + 5) / 2}", "${c % 3}", "${-c + 10}", "${c - d * 2}"]}
      - {name: "b${c}_${d}", shape: ["${c / d}", "${(c - 1) * (d + 1)}", "${ c }"]}
    nodes:
      - {name: "n${c * 10 + d}", op: Relu, inputs: [x], outputs: [y]}
nodes:
  - use: shapes
    args: {c: 7, d: 3}
)");
  const Graph& g = m.graph;
  // c = 7, d = 3: 15, 6, 1, 3, 1 and 2, 24, 7 (integer division truncates).
  CHECK(value_of(g, "a8").shape == Shape{15, 6, 1, 3, 1});
  CHECK(value_of(g, "b7_3").shape == Shape{2, 24, 7});
  CHECK(g.nodes.at(0).name == "n73");
}

TEST_CASE("repeat with start and chain wires iteration k's input to iteration k-1's output") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [1, 4]}]
outputs: [b3.out]
templates:
  block:
    params: [name, x, y, c, t]
    initializers:
      - {name: "${name}.scale", shape: ["${c}"]}
      - {name: "${name}.tag", shape: ["${t}", "${i}"]}
    nodes:
      - {name: "${name}", op: Mul, inputs: ["${x}", "${name}.scale"], outputs: ["${y}"]}
nodes:
  - use: block
    repeat: 3
    start: 1
    chain: [x, y]
    args: {name: "b${i}", x: x, y: "b${i}.out", c: 4, t: "${i + 3}"}
)");
  const Graph& g = m.graph;
  REQUIRE(g.nodes.size() == 3);
  CHECK(g.nodes[0].name == "b1");
  CHECK(g.nodes[1].name == "b2");
  CHECK(g.nodes[2].name == "b3");
  CHECK(input_names(g, g.nodes[0]) == std::vector<std::string>{"x", "b1.scale"});
  CHECK(input_names(g, g.nodes[1]) == std::vector<std::string>{"b1.out", "b2.scale"});
  CHECK(input_names(g, g.nodes[2]) == std::vector<std::string>{"b2.out", "b3.scale"});
  // ${i} follows start, both in arguments (t = i + 3) and inside the template body.
  CHECK(value_of(g, "b1.tag").shape == Shape{4, 1});
  CHECK(value_of(g, "b2.tag").shape == Shape{5, 2});
  CHECK(value_of(g, "b3.tag").shape == Shape{6, 3});
  CHECK(value_of(g, "b3.out").shape == Shape{1, 4});
}

TEST_CASE("repeat without chain and default start 0 makes independent copies") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [3]}]
outputs: [y0, y1]
templates:
  r:
    params: [y]
    nodes:
      - {name: "relu${i}", op: Relu, inputs: [x], outputs: ["${y}"]}
nodes:
  - {use: r, repeat: 2, args: {y: "y${i}"}}
)");
  const Graph& g = m.graph;
  REQUIRE(g.nodes.size() == 2);
  CHECK(g.nodes[0].name == "relu0");
  CHECK(g.nodes[1].name == "relu1");
  CHECK(input_names(g, g.nodes[1]) == std::vector<std::string>{"x"});
  CHECK(g.value(g.outputs[1]).name == "y1");
}

TEST_CASE("nested templates pass arguments down and record both use sites") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [2, 6]}]
outputs: [z]
templates:
  act:
    params: [n, x, y]
    nodes:
      - {name: "${n}.relu", op: Relu, inputs: ["${x}"], outputs: ["${y}"]}
  lin_act:
    params: [n, x, y, cin, cout]
    initializers:
      - {name: "${n}.w", shape: ["${cin}", "${cout}"]}
    nodes:
      - {name: "${n}", op: MatMul, inputs: ["${x}", "${n}.w"], outputs: ["${n}.mm"]}
      - use: act
        args: {n: "${n}", x: "${n}.mm", y: "${y}"}
nodes:
  - use: lin_act
    args: {n: fc, x: x, y: z, cin: 6, cout: "${2 * 5}"}
)");
  const Graph& g = m.graph;
  REQUIRE(g.nodes.size() == 2);
  CHECK(value_of(g, "fc.w").shape == Shape{6, 10});
  const Node& relu = node_of(g, "fc.relu");
  CHECK(input_names(g, relu) == std::vector<std::string>{"fc.mm"});
  CHECK(value_of(g, "z").shape == Shape{2, 10});
  CHECK(relu.loc.line == 9);
  CHECK(relu.loc.via == "template 'act' used at t.yaml:16:9, template 'lin_act' used at t.yaml:19:5");
}

TEST_CASE("only a whole-string ${expr} becomes an int; other text stays a string") {
  // auto_pad is a string attribute: "${p}" with p = VALID stays a string. kernel_shape needs
  // ints: "${k}" is the int 2, while "x${k}" would be a string (checked in the error tests).
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [1, 1, 5, 5]}]
outputs: [y]
templates:
  pool:
    params: [k, p, c]
    nodes:
      - {name: mp, op: MaxPool, inputs: [x], outputs: [y],
         attrs: {kernel_shape: ["${k}", "${k + 1}"], auto_pad: "${p}", ceil_mode: "${c}"}}
nodes:
  - {use: pool, args: {k: 2, p: VALID, c: 0}}
)");
  const Node& n = m.graph.nodes.at(0);
  CHECK(n.attr_ints("kernel_shape") == std::vector<int64_t>{2, 3});
  CHECK(n.attr_i("ceil_mode") == 0);
  CHECK(n.attrs.at("ceil_mode").type == AttrType::kInt);
  // VALID resolved into zero pads; 5 - 2 + 1 = 4 rows, 5 - 3 + 1 = 3 columns.
  CHECK(value_of(m.graph, "y").shape == Shape{1, 1, 4, 3});
}

TEST_CASE("omitted optional input and node attributes with defaults") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [4]}]
outputs: [y]
initializers:
  - {name: hi, shape: [], value: 6}
nodes:
  - {name: clip, op: Clip, inputs: [x, "", hi], outputs: [y]}
)");
  const Node& n = m.graph.nodes.at(0);
  REQUIRE(n.inputs.size() == 3);
  CHECK(n.inputs[1] == kNoValue);
  CHECK(m.graph.value(n.inputs[2]).data.f32()[0] == 6.0f);
  CHECK(n.attr_f("min") == doctest::Approx(-3.4028234663852886e38));
}

TEST_CASE("a node may read a weight that a later template use declares (nodes in any order)") {
  ModelSpec m = load_ok(R"(fusert: 1
name: t
inputs: [{name: x, shape: [2]}]
outputs: [z]
templates:
  T:
    params: [n]
    initializers:
      - {name: "${n}.w", shape: [2], init: ones}
    nodes:
      - {name: "${n}", op: Add, inputs: [x, "${n}.w"], outputs: ["${n}.y"]}
nodes:
  - {name: r, op: Mul, inputs: ["a.y", "a.w"], outputs: [z]}
  - {use: T, args: {n: a}}
)");
  const Value& w = value_of(m.graph, "a.w");
  CHECK(w.is_initializer);
  CHECK(w.init == InitKind::kOnes);
  CHECK(w.shape == Shape{2});
  REQUIRE(m.graph.nodes.size() == 2);
  CHECK(m.graph.nodes[0].name == "a");  // sorted: the producer of a.y first
  CHECK(w.consumers.size() == 2);
}

TEST_CASE("load_model reads a file and reports a missing one") {
  auto r = load_model(FUSERT_SOURCE_DIR "/models/resnet18.yaml");
  REQUIRE(r.ok());
  CHECK(r->graph.name == "resnet18");
  CHECK(r->graph.value(r->graph.outputs[0]).shape == Shape{1, 1000});
  CHECK(r->labels_path == FUSERT_SOURCE_DIR "/models/imagenet_labels.txt");
  auto missing = load_model("/nonexistent/dir/m.yaml");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "/nonexistent/dir/m.yaml: cannot open model file");
}

TEST_CASE("every bundled model loads, is shape-inferred and ends in [1, 1000] logits") {
  for (const char* name : {"resnet18", "resnet50", "mobilenet_v2", "efficientnet_lite0"}) {
    INFO(name);
    auto r = load_model(std::string(FUSERT_SOURCE_DIR "/models/") + name + ".yaml");
    REQUIRE(r.ok());
    CHECK(r->graph.value(r->graph.outputs[0]).shape == Shape{1, 1000});
    CHECK(r->preprocess.present);
  }
}
