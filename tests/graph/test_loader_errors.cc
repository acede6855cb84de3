// YAML loader, rejected input: every error is a Status (never a crash or an escaping
// exception) whose message names "file:line:column" and what is wrong (node, attribute,
// expected and actual shapes). Line/column numbers below are counted by hand from the YAML.
#include <doctest/doctest.h>

#include <string>

#include "graph/op.h"
#include "tests/graph/graph_test_util.h"

using namespace fusert;
using fusert::test::expect_load_error;
using fusert::test::load_yaml;

namespace {

// Lines 1-6 of most models below; the first node is on line 7, its '{' in column 5.
const std::string kHead =
    "fusert: 1\n"
    "name: t\n"
    "inputs:\n"
    "  - {name: x, shape: [1, 2, 4, 4]}\n"
    "outputs: [y]\n"
    "nodes:\n";

}  // namespace

TEST_CASE("malformed YAML names file:line:column") {
  // The second ']' (column 30) closes a flow mapping that was never opened.
  expect_load_error("fusert: 1\nname: t\ninputs: [{name: x, shape: [1]]\noutputs: [y]\n",
                    {"t.yaml:3:30: malformed YAML: illegal flow end"});
  // A mapping value indented under a scalar: yaml-cpp stops at its ':' (column 6).
  expect_load_error("fusert: 1\nname: t\n  bad: indentation\n", {"t.yaml:3:6: malformed YAML: illegal map value"});
  expect_load_error("fusert: 1\nname: t\ninputs:\n  - {name: x, shape: [1}\n",
                    {"t.yaml:4:24: malformed YAML: illegal flow end"});
  CHECK(load_yaml("fusert: 1\nname: t\n  bad: indentation\n").status().code() == StatusCode::kParseError);
}

TEST_CASE("structural errors: not a mapping, unknown top-level key, version, missing lists") {
  expect_load_error("", {"t.yaml:1:1: ", "a model file must be a YAML mapping"});
  expect_load_error("- just\n- a list\n", {"t.yaml:1:1: ", "a model file must be a YAML mapping"});
  expect_load_error("fusert: 1\nname: t\nnodez: []\n", {"t.yaml:3:1: ", "unknown key 'nodez' in the model file"});
  expect_load_error("fusert: 2\nname: t\n", {"t.yaml:1:9: ", "unsupported format version 2"});
  expect_load_error("fusert: one\nname: t\n", {"t.yaml:1:9: ", "must be an integer, got 'one'"});
  // A missing key has no position of its own: the mapping that lacks it is named.
  expect_load_error("fusert: 1\ninputs: []\n", {"t.yaml:1:1: ", "'name' is missing"});
  expect_load_error("name: t\n", {"t.yaml:1:1: ", "'fusert' (format version) is missing"});
  expect_load_error("fusert: 1\nname: t\ninputs:\n  - {shape: [1]}\n", {"t.yaml:4:5: ", "input name is missing"});
  expect_load_error("fusert: 1\nname: t\ninputs:\n  - {name: x}\n", {"t.yaml:4:5: ", "input 'x' needs a shape list"});
  expect_load_error(kHead + "  - {op: Relu, inputs: [x], outputs: [y]}\n", {"t.yaml:7:5: ", "node 'name' is missing"});
  expect_load_error(kHead + "  - {name: r, inputs: [x], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'r': 'op' is missing"});
  expect_load_error(kHead + "  - {name: r, op: Relu, inputs: [x], outputs: [y]}\ninitializers:\n  - {shape: [1]}\n",
                    {"t.yaml:9:5: ", "initializer 'name' is missing"});
  expect_load_error("fusert: 1\nname: t\noutputs: [y]\nnodes: []\n", {"t.yaml:1:1: ", "'inputs' (a list) is required"});
  expect_load_error(kHead.substr(0, kHead.size() - 7) + "\n",  // no nodes
                    {"t.yaml:1:1: ", "'nodes' (a list) is required"});
  expect_load_error("fusert: 1\nname: t\ninputs:\n  - {name: x, shape: [1, 0]}\noutputs: [x]\nnodes: []\n",
                    {"t.yaml:4:26: ", "input 'x' dimension must be >= 1, got 0"});
  expect_load_error("fusert: 1\nname: t\ninputs:\n  - {name: x, shape: [1], dtype: f8}\noutputs: [x]\nnodes: []\n",
                    {"t.yaml:4:34: ", "unknown dtype 'f8'"});
}

TEST_CASE("missing or dangling outputs") {
  expect_load_error(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\nnodes:\n  - {name: r, op: Relu, inputs: [x], outputs: "
      "[y]}\n",
      {"t.yaml:1:1: ", "'outputs' (a non-empty list of value names) is required"});
  expect_load_error(kHead.substr(0, kHead.find("outputs")) + "outputs: []\nnodes: []\n",
                    {"t.yaml:1:1: ", "'outputs' (a non-empty list of value names) is required"});
  expect_load_error(kHead + "  - {name: r, op: Relu, inputs: [x], outputs: [z]}\n",
                    {"t.yaml:5:11: ", "graph output 'y' is not produced by any node"});
}

TEST_CASE("unknown op lists every known op") {
  std::string msg = expect_load_error(kHead + "  - {name: r, op: Relu6, inputs: [x], outputs: [y]}\n",
                                      {"t.yaml:7:19: ", "node 'r': unknown op 'Relu6'", "known ops: "});
  for (int k = 0; k < static_cast<int>(OpKind::kCount); ++k) {
    const char* name = op_name(static_cast<OpKind>(k));
    INFO(name);
    CHECK(msg.find(name) != std::string::npos);
  }
  CHECK(load_yaml(kHead + "  - {name: r, op: relu, inputs: [x], outputs: [y]}\n").status().code() ==
        StatusCode::kUnsupported);  // op names are case-sensitive, as in ONNX
}

TEST_CASE("unknown attribute names the node and lists the op's attributes") {
  expect_load_error(kHead + "  - {name: r, op: Relu, inputs: [x], outputs: [y], attrs: {alpha: 1}}\n",
                    {"t.yaml:7:60: ", "node 'r': Relu has no attribute 'alpha' (attributes: none)"});
  expect_load_error(kHead + "  - {name: p, op: MaxPool, inputs: [x], outputs: [y], attrs: {kernel: [2, 2]}}\n",
                    {"t.yaml:7:63: ", "node 'p': MaxPool has no attribute 'kernel'",
                     "kernel_shape, strides, pads, dilations, ceil_mode, auto_pad, storage_order"});
}

TEST_CASE("wrong attribute types name node, attribute, expected and actual type") {
  // The attrs mapping opens in column 62 of line 7: kernel_shape's value starts in column 77.
  const std::string pool = kHead + "  - {name: p, op: MaxPool, inputs: [x], outputs: [y], attrs: {";
  expect_load_error(pool + "kernel_shape: [2, 2], ceil_mode: 1.5}}\n",
                    {"t.yaml:7:96: ", "node 'p': attribute 'ceil_mode' expects int, got float 1.5"});
  expect_load_error(pool + "kernel_shape: [2, 2], ceil_mode: yes}}\n",
                    {"t.yaml:7:96: ", "attribute 'ceil_mode' expects int, got string 'yes'"});
  expect_load_error(pool + "kernel_shape: abc}}\n",
                    {"t.yaml:7:77: ", "attribute 'kernel_shape' expects ints, got a scalar"});
  expect_load_error(pool + "kernel_shape: [2, two]}}\n",
                    {"t.yaml:7:77: ", "attribute 'kernel_shape' expects ints, got a list holding 'two'"});
  expect_load_error(pool + "kernel_shape: [2, 2.0]}}\n",
                    {"t.yaml:7:77: ", "attribute 'kernel_shape' expects ints, got a list holding float 2.0"});
  expect_load_error(pool + "kernel_shape: [2, 2], auto_pad: [1]}}\n",
                    {"t.yaml:7:95: ", "attribute 'auto_pad' expects string, got a list"});
  // An int where a float is expected is fine; a string is not.
  expect_load_error(kHead + "  - {name: h, op: HardSigmoid, inputs: [x], outputs: [y], attrs: {alpha: big}}\n",
                    {"t.yaml:7:74: ", "node 'h': attribute 'alpha' expects float, got string 'big'"});
}

TEST_CASE("missing required attribute names node, op and attribute") {
  expect_load_error(kHead + "  - {name: p, op: MaxPool, inputs: [x], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'p' (MaxPool) needs attribute 'kernel_shape'"});
  expect_load_error(kHead + "  - {name: c, op: Concat, inputs: [x, x], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'c' (Concat) needs attribute 'axis'"});
}

TEST_CASE("input count outside the op's arity, outputs other than one") {
  expect_load_error(kHead + "  - {name: a, op: Add, inputs: [x], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'a' (Add) takes 2..2 inputs, got 1"});
  expect_load_error(kHead + "  - {name: a, op: Relu, inputs: [x], outputs: [y, z]}\n",
                    {"t.yaml:7:5: ", "node 'a' (Relu) has 1..1 outputs, got 2"});
  expect_load_error(kHead + "  - {name: a, op: Relu, inputs: [x], outputs: [\"\"]}\n",
                    {"t.yaml:7:48: ", "node 'a': empty output name"});
  expect_load_error(kHead + "  - {name: a, op: Relu, outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'a' needs an 'inputs' list"});
  expect_load_error(kHead + "  - {name: a, op: Relu, inputs: [x], outputs: [y], color: red}\n",
                    {"t.yaml:7:52: ", "unknown key 'color' in a node"});
  // A required input left empty ("") is caught by the verifier.
  expect_load_error(kHead + "  - {name: a, op: Add, inputs: [x, \"\"], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'a': required input 1 is empty"});
}

TEST_CASE("Conv weight channel mismatch names node, weight, expected and actual shapes") {
  std::string msg = expect_load_error(kHead +
                                          "  - {name: conv1, op: Conv, inputs: [x, w], outputs: [y]}\n"
                                          "initializers:\n"
                                          "  - {name: w, shape: [8, 3, 3, 3]}\n",
                                      {"t.yaml:7:5: ", "node 'conv1' (Conv): ", "weight 'w' expected [8, 2, KH, KW]",
                                       "input [1, 2, 4, 4]", "got [8, 3, 3, 3]"});
  CHECK(load_yaml(kHead + "  - {name: conv1, op: Conv, inputs: [x, w], outputs: [y]}\n"
                          "initializers:\n  - {name: w, shape: [8, 3, 3, 3]}\n")
            .status()
            .code() == StatusCode::kShapeMismatch);
  expect_load_error(kHead +
                        "  - {name: c, op: Conv, inputs: [x, w, b], outputs: [y]}\n"
                        "initializers:\n  - {name: w, shape: [8, 2, 3, 3]}\n  - {name: b, shape: [4]}\n",
                    {"t.yaml:7:5: ", "node 'c' (Conv): bias 'b' expected [8], got [4]"});
  expect_load_error(kHead +
                        "  - {name: c, op: Conv, inputs: [x, w], outputs: [y], attrs: {group: 2}}\n"
                        "initializers:\n  - {name: w, shape: [3, 1, 3, 3]}\n",
                    {"node 'c' (Conv): group 2 must divide input channels 2 and output channels 3"});
  expect_load_error(kHead +
                        "  - {name: c, op: Conv, inputs: [x, w], outputs: [y], attrs: {kernel_shape: [3, 3]}}\n"
                        "initializers:\n  - {name: w, shape: [4, 2, 1, 1]}\n",
                    {"node 'c' (Conv): kernel_shape [3, 3] disagrees with weight [4, 2, 1, 1]"});
  expect_load_error(kHead +
                        "  - {name: c, op: Conv, inputs: [x, w], outputs: [y]}\n"
                        "initializers:\n  - {name: w, shape: [4, 2, 5, 5]}\n",
                    {"node 'c' (Conv): kernel 5 larger than padded input 4"});
}

TEST_CASE("Gemm inner dimension mismatch and MatMul mismatch") {
  const std::string head = "fusert: 1\nname: t\ninputs:\n  - {name: a, shape: [2, 3]}\noutputs: [y]\nnodes:\n";
  expect_load_error(head +
                        "  - {name: fc, op: Gemm, inputs: [a, b], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [4, 5]}\n",
                    {"t.yaml:7:5: ", "node 'fc' (Gemm): inner dimensions differ: A' is [2, 3], B' is [4, 5]"});
  // With transB, B [5, 4] is used as B' = B^T = [4, 5]: K is 4 against A's 3.
  expect_load_error(head +
                        "  - {name: fc, op: Gemm, inputs: [a, b], outputs: [y], attrs: {transB: 1}}\n"
                        "initializers:\n  - {name: b, shape: [5, 4]}\n",
                    {"node 'fc' (Gemm): inner dimensions differ: A' is [2, 3], B' is [4, 5]"});
  expect_load_error(head +
                        "  - {name: fc, op: Gemm, inputs: [a, b, c], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [3, 5]}\n  - {name: c, shape: [3]}\n",
                    {"node 'fc' (Gemm): C shape [3] does not broadcast to [2, 5]"});
  expect_load_error(head +
                        "  - {name: mm, op: MatMul, inputs: [a, b], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [4, 5]}\n",
                    {"t.yaml:7:5: ", "node 'mm' (MatMul): inner dimensions differ: [2, 3] @ [4, 5]"});
  expect_load_error(head +
                        "  - {name: mm, op: MatMul, inputs: [a3, b], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [3, 3, 5]}\n  - {name: a3, shape: [2, 2, 3]}\n",
                    {"node 'mm' (MatMul): batch dimensions do not broadcast: [2, 2, 3] @ [3, 3, 5]"});
}

TEST_CASE("broadcast failure names both shapes") {
  expect_load_error(kHead +
                        "  - {name: add, op: Add, inputs: [x, b], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [3]}\n",
                    {"t.yaml:7:5: ", "node 'add' (Add): cannot broadcast [1, 2, 4, 4] with [3]"});
  expect_load_error(kHead +
                        "  - {name: m, op: Mul, inputs: [b, x], outputs: [y]}\n"
                        "initializers:\n  - {name: b, shape: [3, 1, 1]}\n",
                    {"node 'm' (Mul): cannot broadcast [3, 1, 1] with [1, 2, 4, 4]"});
}

TEST_CASE("a cycle of two nodes is reported at a node on the cycle") {
  expect_load_error(kHead +
                        "  - {name: a, op: Relu, inputs: [q], outputs: [p]}\n"
                        "  - {name: b, op: Relu, inputs: [p], outputs: [q]}\n"
                        "  - {name: c, op: Add, inputs: [x, p], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "the graph has a cycle through node 'a'"});
  // A self-loop.
  expect_load_error(kHead + "  - {name: s, op: Add, inputs: [x, y], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "the graph has a cycle through node 's'"});
}

TEST_CASE("a value with two producers names the value and both nodes") {
  expect_load_error(kHead +
                        "  - {name: r1, op: Relu, inputs: [x], outputs: [y]}\n"
                        "  - {name: r2, op: Sigmoid, inputs: [x], outputs: [y]}\n",
                    {"t.yaml:8:5: ", "value 'y' is produced by node 'r2' but already by node 'r1'"});
  // Writing a graph input or an initializer is the same error.
  expect_load_error(kHead +
                        "  - {name: r, op: Relu, inputs: [x], outputs: [x]}\n"
                        "  - {name: s, op: Relu, inputs: [x], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "value 'x' is produced by node 'r' but already a graph input or initializer"});
}

TEST_CASE("an input that nothing produces names node and value") {
  expect_load_error(kHead + "  - {name: add, op: Add, inputs: [x, ghost], outputs: [y]}\n",
                    {"t.yaml:7:5: ", "node 'add' reads 'ghost', which no node produces"});
}

TEST_CASE("duplicate names") {
  expect_load_error(kHead +
                        "  - {name: r, op: Relu, inputs: [x], outputs: [a]}\n"
                        "  - {name: r, op: Relu, inputs: [a], outputs: [y]}\n",
                    {"t.yaml:8:5: ", "duplicate node name 'r'"});
  expect_load_error(kHead +
                        "  - {name: r, op: Relu, inputs: [x], outputs: [y]}\n"
                        "initializers:\n  - {name: w, shape: [1]}\n  - {name: w, shape: [2]}\n",
                    {"t.yaml:10:5: ", "duplicate initializer or value 'w'"});
  // An initializer named like a node output or a graph input is still a duplicate.
  expect_load_error(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates:\n"
      "  T: {params: [], initializers: [{name: y, shape: [2]}]}\n"
      "nodes:\n  - {name: r, op: Relu, inputs: [x], outputs: [y]}\n  - {use: T}\n",
      {"t.yaml:6:34 (template 'T' used at t.yaml:9:5): ", "duplicate initializer or value 'y'"});
  expect_load_error(
      kHead + "  - {name: r, op: Relu, inputs: [x], outputs: [y]}\ninitializers:\n  - {name: x, shape: [1]}\n",
      {"t.yaml:9:5: ", "duplicate initializer or value 'x'"});
  expect_load_error(
      "fusert: 1\nname: t\ninputs:\n  - {name: x, shape: [1]}\n  - {name: x, shape: [2]}\n"
      "outputs: [x]\nnodes: []\n",
      {"t.yaml:5:5: ", "duplicate input 'x'"});
}

TEST_CASE("initializer errors: constant size, non-numeric constant, unknown init, non-f32 weight") {
  const std::string node = kHead + "  - {name: r, op: Relu, inputs: [x], outputs: [y]}\ninitializers:\n";
  expect_load_error(node + "  - {name: c, shape: [2, 2], value: [1, 2, 3]}\n",
                    {"t.yaml:9:37: ", "constant 'c' has 3 values for shape [2, 2]"});
  expect_load_error(node + "  - {name: c, shape: [2], value: [1, one]}\n",
                    {"t.yaml:9:38: ", "constant 'c': 'one' is not a number"});
  expect_load_error(node + "  - {name: w, shape: [2], init: he}\n", {"t.yaml:9:33: ", "unknown init 'he'"});
  expect_load_error(node + "  - {name: w, shape: [2], dtype: f16}\n", {"t.yaml:9:5: ", "weight 'w' must be f32"});
  expect_load_error(node + "  - {name: w, shape: [2, -1]}\n",
                    {"t.yaml:9:26: ", "initializer 'w' has a negative dimension"});
  expect_load_error(node + "  - {name: w}\n", {"t.yaml:9:5: ", "initializer 'w' needs a 'shape' list"});
}

TEST_CASE("template errors: unknown template, missing argument, unknown parameter") {
  const std::string tpl =
      "fusert: 1\n"                                                                         // 1
      "name: t\n"                                                                           // 2
      "inputs: [{name: x, shape: [2]}]\n"                                                   // 3
      "outputs: [y]\n"                                                                      // 4
      "templates:\n"                                                                        // 5
      "  act:\n"                                                                            // 6
      "    params: [x, y]\n"                                                                // 7
      "    nodes:\n"                                                                        // 8
      "      - {name: \"relu_${x}\", op: Relu, inputs: [\"${x}\"], outputs: [\"${y}\"]}\n"  // 9
      "nodes:\n";                                                                           // 10
  expect_load_error(tpl + "  - {use: acts, args: {x: x, y: y}}\n", {"t.yaml:11:11: ", "unknown template 'acts'"});
  expect_load_error(tpl + "  - {use: act, args: {x: x}}\n", {"t.yaml:11:5: ", "template 'act': missing argument 'y'"});
  expect_load_error(tpl + "  - {use: act, args: {x: x, y: y, z: 1}}\n",
                    {"t.yaml:11:35: ", "template 'act' has no parameter 'z'"});
  expect_load_error(tpl + "  - {use: act, args: {x: x, y: y}, repeat: 0}\n",
                    {"t.yaml:11:5: ", "'repeat' must be in 1..100000, got 0"});
  expect_load_error(tpl + "  - {use: act, args: {x: x, y: y}, chain: [x, q]}\n",
                    {"t.yaml:11:43: ", "'chain' names must be parameters of 'act'"});
  expect_load_error(tpl + "  - {use: act, args: {x: x, y: y}, times: 2}\n",
                    {"t.yaml:11:36: ", "unknown key 'times' in a template use"});
  // An argument referring to an unknown name: the error is at the argument, in the use.
  expect_load_error(tpl + "  - {use: act, args: {x: \"${w}\", y: y}}\n",
                    {"t.yaml:11:26: ", "argument: unknown parameter 'w' in '${w}'"});
}

TEST_CASE("unknown parameter inside a template body names the template's node and the use site") {
  const std::string yaml =
      "fusert: 1\n"
      "name: t\n"
      "inputs: [{name: x, shape: [2]}]\n"
      "outputs: [y]\n"
      "templates:\n"
      "  act:\n"
      "    params: [x, y]\n"
      "    initializers:\n"
      "      - {name: \"w_${x}\", shape: [\"${n + 1}\"]}\n"  // line 9, the "${n + 1}" scalar in column 34
      "    nodes:\n"
      "      - {name: relu, op: Relu, inputs: [\"${x}\"], outputs: [\"${y}\"]}\n"
      "nodes:\n"
      "  - {use: act, args: {x: x, y: y}}\n";  // line 13, column 5
  expect_load_error(yaml,
                    {"t.yaml:9:34 (template 'act' used at t.yaml:13:5): ", "in '${n + 1}': unknown parameter 'n'"});
}

TEST_CASE("bad ${expr}: division by zero, syntax, non-integer parameter, unterminated") {
  auto with_shape = [](const std::string& dim, const std::string& args) {
    return "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates:\n  T:\n"
           "    params: [a, s]\n    initializers:\n      - {name: w, shape: [\"" +
           dim +
           "\"]}\n"
           "    nodes:\n      - {name: r, op: Relu, inputs: [x], outputs: [y]}\nnodes:\n  - {use: T, args: {" +
           args + "}}\n";
  };
  expect_load_error(with_shape("${a / 0}", "a: 4, s: q"), {"t.yaml:9:27 ", "division by zero"});
  expect_load_error(with_shape("${a % (a - 4)}", "a: 4, s: q"), {"division by zero"});
  expect_load_error(with_shape("${a +}", "a: 4, s: q"), {"t.yaml:9:27 ", "expected a number or parameter name"});
  expect_load_error(with_shape("${(a + 1}", "a: 4, s: q"), {"missing ')'"});
  expect_load_error(with_shape("${a 2}", "a: 4, s: q"), {"unexpected '2'"});
  expect_load_error(with_shape("${s * 2}", "a: 4, s: q"), {"parameter 's' = 'q' is not an integer"});
  expect_load_error(with_shape("${a", "a: 4, s: q"), {"unterminated '${'"});
  expect_load_error(with_shape("x${a}", "a: 4, s: q"),
                    {"t.yaml:9:27 ", "initializer dimension must be an integer, got 'x4'"});
}

TEST_CASE("template recursion stops at depth 16 with a message naming the template") {
  const std::string yaml =
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\n"
      "templates:\n"
      "  loop:\n"
      "    params: [x]\n"
      "    nodes:\n"
      "      - {use: loop, args: {x: \"${x}\"}}\n"  // line 9
      "nodes:\n"
      "  - {use: loop, args: {x: x}}\n";
  std::string msg =
      expect_load_error(yaml, {"t.yaml:9:9 ", "templates nested deeper than 16", "recursive use of 'loop'"});
  // The outermost use site is part of the location chain.
  CHECK(msg.find("used at t.yaml:11:5") != std::string::npos);
  // Two templates using each other.
  expect_load_error(
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates:\n"
      "  a: {params: [], nodes: [{use: b}]}\n  b: {params: [], nodes: [{use: a}]}\nnodes:\n  - {use: a}\n",
      {"templates nested deeper than 16"});
}

TEST_CASE("no error escapes as an exception for odd YAML shapes") {
  // Each of these is wrong in a way a careless loader would index or convert blindly.
  const char* cases[] = {
      "",
      "42\n",
      "fusert: 1\nname: [a, b]\n",
      "fusert: 1\nname: t\ninputs: {x: 1}\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: 3}]\n",
      "fusert: 1\nname: t\ninputs: [x]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [3]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: {a: 1}\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: [Relu]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Relu, inputs: x, "
      "outputs: [y]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Relu, inputs: [x], "
      "outputs: [y], attrs: [1]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [[y]]\nnodes: [{name: r, op: Relu, inputs: [x], "
      "outputs: [y]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates: [1]\nnodes: []\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates: {T: 3}\nnodes: [{use: T}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ntemplates: {T: {params: [a]}}\nnodes: [{use: "
      "T, args: [1]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\ninitializers: [{use: T}]\nnodes: []\n",
      "fusert: 1\nname: t\npreprocess: {resize: big}\ninputs: [{name: x, shape: [2]}]\noutputs: [x]\nnodes: []\n",
      "fusert: 1\nname: t\npreprocess: {mean: [1]}\ninputs: [{name: x, shape: [2]}]\noutputs: [x]\nnodes: []\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Relu, inputs: [x], "
      "outputs: [y], attrs: {min: 1}}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Concat, inputs: "
      "[\"\"], outputs: [y], attrs: {axis: 0}}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Gemm, inputs: [x, "
      "\"\"], outputs: [y]}]\n",
      "fusert: 1\nname: t\ninputs: [{name: x, shape: [2]}]\noutputs: [y]\nnodes: [{name: r, op: Reshape, inputs: [x, "
      "x], outputs: [y]}]\n",
  };
  for (const char* yaml : cases) {
    INFO(std::string(yaml));
    Result<ModelSpec> r = Status();
    CHECK_NOTHROW(r = load_yaml(yaml));
    CHECK_FALSE(r.ok());
    const std::string msg = r.status().message();
    CHECK(msg.rfind("t.yaml:", 0) == 0);
    // A yaml-cpp exception escaping a lookup would surface as "invalid node" with no position.
    CHECK(msg.find("invalid node") == std::string::npos);
    CHECK(msg.find(":0:0") == std::string::npos);
  }
}
