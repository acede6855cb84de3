// YAML loader `include:` -- templates from other files: paths relative to the including file,
// nested includes, and errors located in the file that holds the offending text.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "graph/loader/model_loader.h"

using namespace fusert;

namespace {

// Writes `text` to a file in a per-process scratch directory (removed at exit), returns its path.
std::string write_scratch(const std::string& name, const std::string& text) {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("fusert_graph_test_" + std::to_string(::getpid()));
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  std::filesystem::path path = dir.path / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("include: templates from other files (relative paths, nested includes); errors name the defining file") {
  write_scratch("inc/lib/acts.yaml", R"(fusert: 1
templates:
  act:
    params: [x, y]
    nodes:
      - {name: "relu_${y}", op: Relu, inputs: ["${x}"], outputs: ["${y}"]}
  bad:
    params: [x, y]
    nodes:
      - {name: "b_${y}", op: Relu, inputs: ["${x}"], outputs: ["${y}"], attrs: {alpha: 1}}
)");
  write_scratch("inc/lib/blocks.yaml", R"(fusert: 1
include: [acts.yaml]
templates:
  double_act:
    params: [x, y]
    nodes:
      - {use: act, args: {x: "${x}", y: "${y}.mid"}}
      - {use: act, args: {x: "${y}.mid", y: "${y}"}}
)");
  std::string model = write_scratch("inc/model.yaml", R"(fusert: 1
name: inc
include: [lib/blocks.yaml]
inputs: [{name: x, shape: [3]}]
outputs: [y]
nodes:
  - {use: double_act, args: {x: x, y: y}}
)");
  auto r = load_model(model);
  INFO(r.status().to_string());
  REQUIRE(r.ok());
  REQUIRE(r->graph.nodes.size() == 2);
  CHECK(r->graph.nodes[0].name == "relu_y.mid");
  CHECK(r->graph.nodes[1].name == "relu_y");
  // The node comes from acts.yaml line 6; the use sites chain back to the model.
  const std::string acts = std::filesystem::path(model).parent_path().string() + "/lib/acts.yaml";
  const std::string blocks = std::filesystem::path(model).parent_path().string() + "/lib/blocks.yaml";
  CHECK(r->graph.nodes[0].loc.file == acts);
  CHECK(r->graph.nodes[0].loc.line == 6);
  CHECK(r->graph.nodes[0].loc.via ==
        "template 'act' used at " + blocks + ":7:9, template 'double_act' used at " + model + ":7:5");

  std::string bad = write_scratch("inc/bad_model.yaml", R"(fusert: 1
name: inc_bad
include: [lib/acts.yaml]
inputs: [{name: x, shape: [3]}]
outputs: [y]
nodes:
  - {use: bad, args: {x: x, y: y}}
)");
  auto e = load_model(bad);
  REQUIRE_FALSE(e.ok());
  const std::string msg = e.status().message();
  INFO(msg);
  CHECK(msg.rfind(acts + ":10:", 0) == 0);
  CHECK(msg.find("Relu has no attribute 'alpha'") != std::string::npos);
  CHECK(msg.find("used at " + bad + ":7:5") != std::string::npos);

  std::string missing = write_scratch("inc/missing_include.yaml", R"(fusert: 1
name: m
include: [nowhere.yaml]
inputs: [{name: x, shape: [3]}]
outputs: [x]
nodes: []
)");
  auto m = load_model(missing);
  REQUIRE_FALSE(m.ok());
  CHECK(m.status().message().rfind(missing + ":3:11: cannot open included file", 0) == 0);

  // A nested include that is missing is reported in the file that names it.
  write_scratch("inc/lib/broken.yaml", "fusert: 1\ninclude: [gone.yaml]\n");
  std::string nested = write_scratch("inc/nested_missing.yaml", R"(fusert: 1
name: n
include: [lib/broken.yaml]
inputs: [{name: x, shape: [3]}]
outputs: [x]
nodes: []
)");
  auto n = load_model(nested);
  REQUIRE_FALSE(n.ok());
  const std::string broken = std::filesystem::path(model).parent_path().string() + "/lib/broken.yaml";
  INFO(n.status().message());
  CHECK(n.status().message().rfind(broken + ":2:11: cannot open included file '" +
                                       std::filesystem::path(model).parent_path().string() + "/lib/gone.yaml'",
                                   0) == 0);
  // 'templates' of an included file that is not a mapping: named in that file.
  write_scratch("inc/lib/badtpl.yaml", "fusert: 1\ntemplates: [1, 2]\n");
  std::string badtpl = write_scratch("inc/badtpl_model.yaml", R"(fusert: 1
name: n
include: [lib/badtpl.yaml]
inputs: [{name: x, shape: [3]}]
outputs: [x]
nodes: []
)");
  auto t = load_model(badtpl);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().message().rfind(std::filesystem::path(model).parent_path().string() +
                                       "/lib/badtpl.yaml:2:12: 'templates' must be a mapping",
                                   0) == 0);
}
