// The pass API (XLA's HloModulePass): a pass rewrites a Graph in place and says whether it
// changed anything. "Not applicable" is an unchanged graph, never an error; errors are for
// broken inputs the pass cannot handle. PassManager runs a list of passes in order, verifying
// the graph after each one when asked, and keeps one record (and log line) per pass.
#pragma once

#include <optional>

#include <memory>
#include <string>
#include <vector>

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual const char* name() const = 0;
  /// Rewrites `g`; true when the graph changed. Must leave `g` topologically ordered, with
  /// links rebuilt (Graph::rebuild_links) and every node output's shape known.
  virtual Result<bool> run(Graph& g) = 0;
  /// What the last run did, one short line ("folded bn1 into conv1"); empty when nothing.
  const std::string& summary() const { return summary_; }

 protected:
  /// Appends "; "-separated items to the summary; passes clear it at the start of run().
  void note(const std::string& item) { summary_ += (summary_.empty() ? "" : "; ") + item; }
  void clear_summary() { summary_.clear(); }

 private:
  std::string summary_;
};

/// One pass's outcome in a PassManager run.
struct PassRecord {
  std::string pass;
  bool changed = false;
  size_t nodes_before = 0, nodes_after = 0;
  double ms = 0;
  std::string summary;
  /// "constant_folding: changed, nodes 12 -> 9 (folded reshape1, cast1)" (no timings, so it
  /// can be diffed).
  std::string log_line() const;
};

class PassManager {
 public:
  /// With `verify`, the graph is checked after every pass (verify_graph_after_pass); a failure
  /// is a kInternal error naming the pass.
  explicit PassManager(bool verify = true) : verify_(verify) {}
  PassManager& add(std::unique_ptr<Pass> pass);
  /// Runs every pass in order; true when any changed the graph. Stops at the first error,
  /// which names the pass.
  Result<bool> run(Graph& g);
  const std::vector<PassRecord>& records() const { return records_; }
  std::vector<std::string> log_lines() const;

 private:
  bool verify_;
  std::vector<std::unique_ptr<Pass>> passes_;
  std::vector<PassRecord> records_;
};

/// The post-pass invariant: verify_graph passes, and re-running shape inference on a copy
/// reproduces every node output's shape and dtype and every initializer's data matches its
/// declared shape and dtype. Errors name `pass`, the value and both shapes.
Status verify_graph_after_pass(const Graph& g, const std::string& pass);

// The standard passes (graph/passes/*.cc).
std::unique_ptr<Pass> make_constant_folding_pass();
/// The value of node `n` when all its inputs are bound constants and its op folds (the
/// constant-folding pass's evaluation of one node; its output shape must be inferred);
/// std::nullopt otherwise. The ONNX importer folds shape subgraphs with it as it reads them.
std::optional<Tensor> fold_constant_node(const Graph& g, const Node& n);
/// Evaluates again, in order, the nodes constant folding folded over symbolic inputs
/// (Graph::symbolic_folds of `folds`), reading symbolic inputs from `env` (value name -> data
/// at the new shape, e.g. the model's symbolic constants expanded there) and adding each
/// output to it. Errors: kInternal when an input is missing or a node no longer folds.
Status refold_symbolic(const Graph& folds, std::map<std::string, Tensor>* env);
std::unique_ptr<Pass> make_bn_folding_pass();
std::unique_ptr<Pass> make_pattern_rewrite_pass();  ///< LayerNorm and GELU recognition
/// An elementwise unary op read through a view (Reshape, Flatten, ...) moves in front of it,
/// where it can be its producer's epilogue (graph/passes/unary_hoist.cc).
std::unique_ptr<Pass> make_unary_hoist_pass();
/// A QDQ Gemm (DequantizeLinear operands, a QuantizeLinear after) -> a 1x1 QLinearConv between two
/// Reshapes (qdq_gemm.cc); runs before constant folding, after the QDQ rewrite rules.
std::unique_ptr<Pass> make_qdq_gemm_pass();
std::unique_ptr<Pass> make_dead_code_pass();

/// The canonicalisation pipeline, in order: constant_folding, bn_folding, pattern_rewrite
/// (LayerNorm, GELU), unary_hoist, dead_code. Weights must be bound first (folding reads Value::data).
/// Returns one log line per pass.
Result<std::vector<std::string>> run_canonicalize(Graph& g, bool verify);

}  // namespace fusert
