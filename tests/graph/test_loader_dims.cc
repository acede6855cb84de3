// Symbolic dims in the model format (models/FORMAT.md, "Symbolic dimensions"): what loads, what
// is marked symbolic, and every rejected form with file:line:column and the reason.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "runtime/session.h"
#include "tests/graph/graph_test_util.h"

using namespace fusert;
using fusert::test::expect_load_error;
using fusert::test::load_ok;

namespace {

// A [batch, seq] input reshaped through a constant that mentions both dims.
std::string model(const std::string& dims, const std::string& shape = "[batch, seq]",
                  const std::string& target = "[\"${batch * seq}\"]") {
  return "fusert: 1\nname: t\ndims: " + dims +
         "\n"
         "inputs:\n"
         "  - {name: x, shape: " +
         shape +
         "}\n"
         "outputs: [y]\n"
         "initializers:\n"
         "  - {name: flat, shape: [1], dtype: i64, value: " +
         target +
         "}\n"
         "  - {name: two, shape: [1], dtype: i64, value: [2]}\n"
         "nodes:\n"
         "  - {name: r, op: Reshape, inputs: [x, flat], outputs: [y]}\n";
}

const std::string kDims = "{batch: {min: 1, max: 8, opt: 2}, seq: {max: 16, opt: 5}}";

}  // namespace

TEST_CASE("dims: input shapes at the opt point, ranges, symbolic constants marked") {
  ModelSpec m = load_ok(model(kDims));
  REQUIRE(m.dims.size() == 2);
  CHECK(m.dims[0].name == "batch");
  CHECK(m.dims[0].min == 1);
  CHECK(m.dims[0].max == 8);
  CHECK(m.dims[1].min == 1);  // default
  CHECK(m.dim_values == DimValues{{"batch", 2}, {"seq", 5}});
  CHECK(m.graph.value(m.graph.inputs[0]).shape == Shape{2, 5});
  REQUIRE(m.input_dims.size() == 1);
  CHECK(m.input_dims[0] == std::vector<std::string>{"batch", "seq"});
  const Value& flat = m.graph.value(m.graph.find_value("flat"));
  CHECK(flat.symbolic);
  CHECK(flat.data.i64()[0] == 10);
  CHECK_FALSE(m.graph.value(m.graph.find_value("two")).symbolic);
  CHECK(m.graph.value(m.graph.find_value("y")).shape == Shape{10});
  auto at = instantiate_model(m, {{"batch", 3}, {"seq", 7}});
  REQUIRE_MESSAGE(at.ok(), at.status().to_string());
  CHECK(at->graph.value(at->graph.find_value("y")).shape == Shape{21});
  CHECK(instantiate_model(m, {{"batch", 9}, {"seq", 7}})
            .status()
            .message()
            .find("dim 'batch' = 9 is outside its "
                  "range 1..8") != std::string::npos);
}

TEST_CASE("dims: rejected declarations and uses name the place and the problem") {
  expect_load_error(model("{batch: {min: 0, max: 8}, seq: {max: 4}}"),
                    {"t.yaml:3:", "dim 'batch' needs 1 <= min <= opt <= max", "got min 0, opt 0, max 8"});
  expect_load_error(model("{batch: {min: 4, max: 2}, seq: {max: 4}}"), {"dim 'batch' needs"});
  expect_load_error(model("{batch: {max: 8, opt: 9}, seq: {max: 4}}"), {"got min 1, opt 9, max 8"});
  expect_load_error(model("{batch: {min: 1}, seq: {max: 4}}"), {"dim 'batch': 'max' is missing"});
  expect_load_error(model("{batch: {max: 8, step: 2}, seq: {max: 4}}"), {"unknown key 'step' in a dim"});
  expect_load_error(model("{i: {max: 8}, batch: {max: 8}, seq: {max: 4}}"),
                    {"dim name 'i' must be an identifier other than 'i'"});
  expect_load_error(model("{2x: {max: 8}, batch: {max: 8}, seq: {max: 4}}"), {"dim name '2x' must be an identifier"});
  expect_load_error(model("[batch, seq]"), {"'dims' must be a mapping of name -> {min, max, opt}"});
  expect_load_error(model("{batch: {max: 8}}"),
                    {"t.yaml:5:", "input 'x': dimension 'seq' is not declared in 'dims'", "dims: {seq: {min: 1"});
  expect_load_error(model("{batch: {max: 8}, seq: {max: 4}, extra: {max: 3}}"),
                    {"dim 'extra' is declared in 'dims' but no input uses it"});
  expect_load_error(model(kDims, "[batch, \"${seq * 2}\"]"),
                    {"input 'x': a dimension is an integer or a name from 'dims', not an expression"});
  // Valid at the opt point only: the load names the dims it fails at.
  expect_load_error(model(kDims, "[batch, seq]", "[10]"),
                    {"node 'r' (Reshape): cannot reshape [1, 1]", "(with dims batch = 1, seq = 1)"});
}

TEST_CASE("dims: a node structure that depends on a dim is refused") {
  const std::string yaml =
      "fusert: 1\nname: t\ndims: {n: {max: 3, opt: 2}}\n"
      "inputs:\n  - {name: x, shape: [n, 4]}\noutputs: [y]\n"
      "templates:\n  relu:\n    params: [a]\n    nodes:\n"
      "      - {name: \"r${i}\", op: Relu, inputs: [\"${a}\"], outputs: [\"t${i}\"]}\n"
      "nodes:\n  - {use: relu, repeat: \"${n}\", args: {a: x}}\n"
      "  - {name: out, op: Relu, inputs: [x], outputs: [y]}\n";
  expect_load_error(yaml, {"the model's nodes differ at n = 1", "not a template's repeat"});
}

TEST_CASE("dims: a constant that moves only inside the range is refused at that shape, never run stale") {
  // (seq - 1) / 100 % 2 is 0 at seq = 1 and at seq = 201 (the ends), 1 at seq = 101.
  const std::string yaml =
      "fusert: 1\nname: t\ndims: {seq: {min: 1, max: 201, opt: 1}}\n"
      "inputs:\n  - {name: x, shape: [1, seq]}\noutputs: [y]\n"
      "initializers:\n  - {name: c, shape: [], value: \"${(seq - 1) / 100 % 2}\"}\n"
      "nodes:\n  - {name: add, op: Add, inputs: [x, c], outputs: [y]}\n";
  const std::string path = "/tmp/fusert_dims_interior_" + std::to_string(::getpid()) + ".yaml";
  { std::ofstream(path) << yaml; }
  SessionOptions opt;
  auto s = Session::load(path, opt);
  std::remove(path.c_str());
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto ok = (*s)->run({{"x", Tensor(DType::kF32, {1, 201})}});
  REQUIRE(ok.ok());
  CHECK(ok->at("y").f32()[0] == 0.f);
  auto bad = (*s)->run({{"x", Tensor(DType::kF32, {1, 101})}});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == StatusCode::kUnsupported);
  CHECK(bad.status().message().find("constant 'c' depends on the dims in a way the range's ends do not show") !=
        std::string::npos);
}
