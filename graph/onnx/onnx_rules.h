// The ONNX importer's rules (internal to graph/onnx): one row per ONNX op and opset range that
// the import does not take as the fusert op of the same name and attributes, in the manner of
// tract's and TVM's registered converters. A row says which of the node's attributes it reads
// itself (the op table's schema does not have them), and what it does, in three stages that
// map_node (onnx_ops.cc) runs in order:
//   fold:    the node is a constant (Constant, Shape, the window functions, ...);
//   rewrite: its inputs and the fusert op it becomes (Squeeze -> Reshape, attribute axes ->
//            constant inputs, a Reshape of a computed shape -> DynamicReshape, ...);
//   attrs:   attributes it sets on the built node (CastLike's `to`, Upsample's mode).
// The rows live beside their helpers: onnx_rules_fold.cc (constants), onnx_rules_shape.cc
// (shapes, axes, dynamic and volumetric forms), onnx_rules_compat.cc (spellings of older
// opsets and other ops fusert expresses otherwise). A new ONNX op or opset change: one row.
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/ir.h"

namespace fusert::onnx_import {

/// What a rule works on: the node, where it is, and the mapping so far.
struct RuleCtx {
  RuleCtx(Graph& graph, const onnx::NodeProto& node, int64_t op_set, const std::string& node_name,
          const SourceLoc& where, const std::string& dir, size_t outputs, std::vector<ValueId>& inputs)
      : g(graph),
        np(node),
        opset(op_set),
        name(node_name),
        loc(where),
        base_dir(dir),
        n_outs(outputs),
        ins(inputs),
        fop(node.op_type()) {}
  Graph& g;
  const onnx::NodeProto& np;
  int64_t opset;
  const std::string& name;  ///< the node's name (constants a rule adds are named after it)
  const SourceLoc& loc;
  const std::string& base_dir;              ///< for Constant's external tensors
  size_t n_outs;                            ///< outputs the node names
  std::vector<ValueId>& ins;                ///< its inputs (trailing absent ones dropped); a rewrite edits them
  std::string fop;                          ///< the fusert op it becomes (starts as the ONNX op type)
  bool done = false;                        ///< a rewrite that decided the op alone stops the later ones
  std::optional<Tensor> constant;           ///< fold: the value (Shape of unknown dims: none)
  bool folded = false;                      ///< fold: the node is a constant (or nothing)
  std::map<std::string, AttrValue> preset;  ///< rewrite: attributes taken from inputs
  const std::string& op() const { return np.op_type(); }
};

/// One ONNX op's rule over the opsets [since, until] (until 0: every later one).
struct OnnxRule {
  using Fold = Status (*)(RuleCtx& c);
  using Rewrite = Status (*)(RuleCtx& c);
  using Attrs = Status (*)(RuleCtx& c, Node* n);
  OnnxRule(const char* op_type, int64_t from, int64_t to, std::vector<std::string> reads, Fold f = nullptr,
           Rewrite r = nullptr, Attrs a = nullptr)
      : op(op_type), since(from), until(to), consumes(std::move(reads)), fold(f), rewrite(r), attrs(a) {}
  const char* op;
  int64_t since;                      ///< first opset
  int64_t until;                      ///< last opset, 0: every later one
  std::vector<std::string> consumes;  ///< attributes it reads itself ("value*": a prefix)
  Fold fold;                          ///< sets RuleCtx::folded (and constant) when the node is a constant
  Rewrite rewrite;                    ///< edits RuleCtx::ins and fop
  Attrs attrs;                        ///< sets attributes on the built node
  bool holds_at(int64_t opset) const { return opset >= since && (until == 0 || opset <= until); }
};

/// The rules of `op` that hold at `opset`, in table order.
std::vector<const OnnxRule*> rules_for(const std::string& op, int64_t opset);
/// ONNX op types with a rule that are not op-table rows (imported only through their rules).
const std::set<std::string>& rewritten_ops();
/// Whether a rule of `op` at `opset` reads attribute `a` itself (and "consumed_inputs" of
/// opsets 1-5, an optimisation hint every op may carry).
bool consumed_attr(const std::string& op, const std::string& a, int64_t opset);

/// The rows of each file (table order within each).
std::vector<OnnxRule> fold_rules();    ///< onnx_rules_fold.cc
std::vector<OnnxRule> shape_rules();   ///< onnx_rules_shape.cc
std::vector<OnnxRule> compat_rules();  ///< onnx_rules_compat.cc

/// Adds a constant input for a rewrite, named after the node (a fresh name).
ValueId add_rule_const(Graph& g, const std::string& name, Tensor data, const SourceLoc& loc);
/// The ints attribute `name` of `np` (empty when absent).
std::vector<int64_t> ints_attr(const onnx::NodeProto& np, const std::string& name);

}  // namespace fusert::onnx_import
