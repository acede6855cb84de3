// Helpers shared by the graph tests: load an inline YAML model, look values and nodes up, and
// assert that an error message holds given fragments (location, node, shapes).
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>

#include "graph/loader/model_loader.h"

namespace fusert::test {

/// The file name every inline model is loaded under; error locations start with it.
constexpr const char* kFile = "t.yaml";

inline Result<ModelSpec> load_yaml(const std::string& yaml) { return load_model_from_string(yaml, kFile); }

/// Loads `yaml`, failing the test (with the error) when it does not load.
inline ModelSpec load_ok(const std::string& yaml) {
  auto r = load_yaml(yaml);
  INFO(yaml);
  if (!r.ok()) FAIL("load failed: " << r.status().to_string());
  return std::move(r).value();
}

/// Loads `yaml`, expects an error, and checks that its message holds every fragment.
/// Returns the message for further checks.
inline std::string expect_load_error(const std::string& yaml, std::initializer_list<std::string> fragments) {
  auto r = load_yaml(yaml);
  INFO(yaml);
  REQUIRE_FALSE(r.ok());
  const std::string msg = r.status().message();
  for (const std::string& f : fragments) {
    INFO("message: " << msg);
    INFO("missing fragment: " << f);
    CHECK(msg.find(f) != std::string::npos);
  }
  return msg;
}

inline const Value& value_of(const Graph& g, const std::string& name) {
  ValueId id = g.find_value(name);
  INFO("value " << name);
  REQUIRE(id != kNoValue);
  return g.value(id);
}

inline const Node& node_of(const Graph& g, const std::string& name) {
  for (const Node& n : g.nodes) {
    if (n.name == name) return n;
  }
  FAIL("no node " << name);
  return g.nodes.front();  // unreachable
}

/// Names of a node's inputs ("" for an omitted one).
inline std::vector<std::string> input_names(const Graph& g, const Node& n) {
  std::vector<std::string> out;
  for (ValueId id : n.inputs) out.push_back(id == kNoValue ? "" : g.value(id).name);
  return out;
}

}  // namespace fusert::test
