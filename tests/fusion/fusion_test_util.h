// Helpers shared by the fusion-planner tests (before/expected pairs, tinygrad's check_schedule):
// load an inline YAML graph with seeded weights, plan it with chosen strategies, look groups and
// refusals up by node name, count kernels, and run a model through Session fused vs unfused.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "graph/fusion/explain.h"
#include "graph/fusion/group.h"
#include "graph/fusion/legality.h"
#include "graph/fusion/planner.h"
#include "graph/loader/model_loader.h"
#include "graph/passes/pass.h"
#include "runtime/backend.h"
#include "runtime/session.h"
#include "runtime/weights.h"

namespace fusert::ftest {

/// Loads `yaml`, binds seeded weights (seed 0, as Session does) and optionally canonicalises.
inline Graph load_graph(const std::string& yaml, bool canonicalize = false) {
  INFO(yaml);
  auto r = load_model_from_string(yaml, "inline.yaml");
  if (!r.ok()) FAIL("load failed: " << r.status().to_string());
  Graph g = std::move(r.value().graph);
  bind_seeded_weights(g, 0);
  if (canonicalize) {
    auto log = run_canonicalize(g, true);
    if (!log.ok()) FAIL("canonicalize failed: " << log.status().to_string());
  }
  return g;
}

/// FusionOptions with exactly the given strategies enabled (the cost-model knobs at defaults).
inline FusionOptions only(std::initializer_list<Strategy> strategies) {
  FusionOptions o;
  o.enabled = std::set<Strategy>(strategies);
  return o;
}

inline FusionOptions all_strategies() { return FusionOptions(); }

inline FusionPlan plan(const Graph& g, const FusionOptions& o) {
  auto r = plan_fusion(g, o);
  if (!r.ok()) FAIL("plan_fusion failed: " << r.status().to_string());
  return std::move(r.value());
}

inline int node_index(const Graph& g, const std::string& name) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].name == name) return static_cast<int>(i);
  FAIL("no node named '" << name << "'");
  return -1;
}

inline std::vector<std::string> names_of(const Graph& g, const std::vector<int>& nodes) {
  std::vector<std::string> out;
  for (int n : nodes) out.push_back(g.nodes[static_cast<size_t>(n)].name);
  return out;
}

inline std::vector<std::string> member_names(const Graph& g, const FusionGroup& grp) { return names_of(g, grp.nodes); }

/// The kernel group holding node `name` (every node is in exactly one kernel group).
inline const FusionGroup& group_of(const Graph& g, const FusionPlan& p, const std::string& name) {
  int n = node_index(g, name);
  REQUIRE(static_cast<size_t>(n) < p.group_of_node.size());
  int gid = p.group_of_node[static_cast<size_t>(n)];
  REQUIRE(gid >= 0);
  REQUIRE(static_cast<size_t>(gid) < p.groups.size());
  return p.groups[static_cast<size_t>(gid)];
}

/// Kernel groups of two or more nodes (the fused kernels), in execution order.
inline std::vector<const FusionGroup*> fused_groups(const FusionPlan& p) {
  std::vector<const FusionGroup*> out;
  for (const FusionGroup* grp : p.kernel_groups())
    if (grp->nodes.size() >= 2) out.push_back(grp);
  return out;
}

/// Compound regions (parents of kernel groups).
inline std::vector<const FusionGroup*> regions(const FusionPlan& p) {
  std::vector<const FusionGroup*> out;
  for (const FusionGroup& grp : p.groups)
    if (!grp.children.empty()) out.push_back(&grp);
  return out;
}

/// Kernel launches of a plan: kernel groups minus alias-only groups (Reshape etc. are views).
inline int kernel_count(const Graph& g, const FusionPlan& p) {
  int n = 0;
  for (const FusionGroup* grp : p.kernel_groups()) {
    bool alias = true;
    for (int ni : grp->nodes) alias &= is_alias_op(g.nodes[static_cast<size_t>(ni)].op);
    n += alias ? 0 : 1;
  }
  return n;
}

inline std::vector<const Rejection*> rejections(const FusionPlan& p, const std::string& key) {
  std::vector<const Rejection*> out;
  for (const Rejection& r : p.rejected)
    if (r.key == key) out.push_back(&r);
  return out;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Asserts the kernel group holding `first` has the strategy, kind and exact members given.
inline const FusionGroup& check_group(const Graph& g, const FusionPlan& p, const std::string& first, Strategy s,
                                      GroupKind k, const std::vector<std::string>& members) {
  const FusionGroup& grp = group_of(g, p, first);
  INFO("group " << grp.name);
  CHECK(strategy_name(grp.strategy) == std::string(strategy_name(s)));
  CHECK(group_kind_name(grp.kind) == std::string(group_kind_name(k)));
  CHECK(member_names(g, grp) == members);
  return grp;
}

/// Every node of `names` is a kernel group of its own (not fused).
inline void check_unfused(const Graph& g, const FusionPlan& p, const std::vector<std::string>& names) {
  for (const std::string& n : names) {
    INFO("node " << n);
    const FusionGroup& grp = group_of(g, p, n);
    CHECK(grp.nodes.size() == 1u);
    CHECK(grp.strategy == Strategy::kNone);
  }
}

// ---- Numerics through Session (fused vs unfused) ----------------------------------------

/// A per-process scratch folder for model files (other test binaries may run concurrently),
/// removed at exit.
inline std::string scratch_dir() {
  struct Scratch {
    std::filesystem::path dir;
    Scratch() : dir(std::filesystem::temp_directory_path() / ("fusert_fusion_tests_" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(dir);
    }
    ~Scratch() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Scratch scratch;
  return scratch.dir.string();
}

/// Writes `yaml` to <scratch>/<stem>.yaml and returns the path.
inline std::string write_model(const std::string& yaml, const std::string& stem) {
  std::string path = scratch_dir() + "/" + stem + ".yaml";
  std::ofstream f(path);
  f << yaml;
  REQUIRE(f.good());
  return path;
}

inline std::unique_ptr<Session> open_session(const std::string& path, const std::string& fusion, int threads = 0,
                                             const std::string& cpu_kernels = "onednn") {
  SessionOptions opt;
  opt.fusion = fusion;
  opt.cpu_kernels = cpu_kernels;
  opt.seeded = true;
  opt.threads = threads;
  auto s = Session::load(path, opt);
  if (!s.ok()) FAIL("Session::load(" << path << ", fusion " << fusion << "): " << s.status().to_string());
  return std::move(s.value());
}

inline TensorMap run_session(Session& s, const TensorMap& inputs) {
  auto out = s.run(inputs);
  if (!out.ok()) FAIL("run failed: " << out.status().to_string());
  return std::move(out.value());
}

/// Relative L2 of every output of `got` against `want` (same names, shapes), each <= tol.
inline void check_outputs_close(const TensorMap& want, const TensorMap& got, double tol) {
  REQUIRE(want.size() == got.size());
  for (const auto& [name, t] : want) {
    INFO("output " << name);
    auto it = got.find(name);
    REQUIRE(it != got.end());
    REQUIRE(it->second.shape() == t.shape());
    double rel = relative_l2(it->second, t);
    INFO("relative L2 " << rel << ", max abs diff " << max_abs_diff(it->second, t));
    CHECK(rel <= tol);
  }
}

/// Runs the model `yaml` with fusion "none" and with each of `modes`; every output agrees within
/// relative L2 `tol`. Inputs default to the session's seeded inputs. Returns the kernel count of
/// the last mode. `cpu_kernels`: SessionOptions::cpu_kernels of every session.
inline int64_t check_fused_matches_unfused(const std::string& yaml, const std::string& stem,
                                           const std::vector<std::string>& modes = {"all"}, double tol = 1e-5,
                                           const TensorMap* inputs = nullptr,
                                           const std::string& cpu_kernels = "onednn") {
  std::string path = write_model(yaml, stem);
  auto ref = open_session(path, "none", 0, cpu_kernels);
  TensorMap in = inputs ? *inputs : ref->seeded_inputs(0);
  TensorMap want = run_session(*ref, in);
  int64_t kernels = 0;
  for (const std::string& mode : modes) {
    INFO("fusion " << mode);
    auto s = open_session(path, mode, 0, cpu_kernels);
    check_outputs_close(want, run_session(*s, in), tol);
    kernels = s->stats().kernels;
  }
  return kernels;
}

}  // namespace fusert::ftest
