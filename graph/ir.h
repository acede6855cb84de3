// The graph IR: values (dtype + static shape), nodes (op kind + typed attributes), graph
// inputs/outputs and initializers (weights and constants).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/base/tensor.h"
#include "graph/op.h"

namespace fusert {

/// Where a node or value was declared: "models/resnet18.yaml:12:5" (+ template use site).
struct SourceLoc {
  std::string file;
  int line = 0, column = 0;
  std::string via;  // "template conv_bn used at file:line:col", may be empty
  std::string str() const;
};

using ValueId = int;
constexpr ValueId kNoValue = -1;

/// How a weight is initialised when no weights file provides it (models/FORMAT.md).
enum class InitKind { kKaiming, kUniform, kBnScale, kBnVar, kInput, kZeros, kOnes };
const char* init_kind_name(InitKind k);
bool parse_init_kind(const std::string& s, InitKind* out);

struct Value {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  bool shape_known = false;
  int producer = -1;           // node index, -1 for graph inputs and initializers
  std::vector<int> consumers;  // node indices (a node using it twice appears twice)
  bool is_graph_input = false;
  bool is_graph_output = false;
  bool is_initializer = false;
  bool is_constant = false;  // value given in the model file, not a weight
  // A constant whose contents depend on a symbolic dim (e.g. a Reshape target [batch, seq, 384]):
  // never folded, re-set for every instantiated shape (runtime/shape_cache.cc).
  bool symbolic = false;
  InitKind init = InitKind::kUniform;
  Tensor data;  // initializer contents once bound (weights or constants)
  SourceLoc loc;
};

using AttrMap = std::map<std::string, AttrValue>;

struct Node {
  std::string name;
  OpKind op = OpKind::kIdentity;
  std::vector<ValueId> inputs;  // kNoValue for an omitted optional input
  std::vector<ValueId> outputs;
  AttrMap attrs;            // complete: defaults from the op table are filled in
  bool fuse_never = false;  // YAML hint `fuse: never`
  SourceLoc loc;

  int64_t attr_i(const std::string& n) const;
  double attr_f(const std::string& n) const;
  const std::vector<int64_t>& attr_ints(const std::string& n) const;
  const std::string& attr_s(const std::string& n) const;
};

/// A node constant folding evaluated although an input was symbolic (Value::symbolic): its
/// output is a symbolic constant too, evaluated again for every instantiated shape
/// (refold_symbolic in graph/passes/pass.h). Inputs by value name; a non-symbolic input's data
/// is kept here since dead-code removal may drop its value from the graph.
struct SymbolicFold {
  Node node;                        ///< the folded node (its inputs/outputs ids are stale)
  std::vector<std::string> inputs;  ///< input value names ("" for an omitted input)
  std::vector<Tensor> fixed;        ///< data of non-symbolic inputs (empty for symbolic ones)
  std::string output;
};

/// A graph in topological node order (the loader sorts; passes keep the order valid).
class Graph {
 public:
  std::string name;
  std::string source_file;
  std::vector<Value> values;
  std::vector<Node> nodes;
  std::vector<ValueId> inputs, outputs;
  std::vector<SymbolicFold> symbolic_folds;  ///< in evaluation order

  ValueId find_value(const std::string& name) const;  ///< kNoValue if absent
  ValueId add_value(const std::string& name);         ///< creates or returns existing
  const Value& value(ValueId id) const { return values[static_cast<size_t>(id)]; }
  Value& value(ValueId id) { return values[static_cast<size_t>(id)]; }
  /// Recomputes producer/consumer links from nodes (after a pass edits them).
  void rebuild_links();
  /// Initializer value ids in declaration order.
  std::vector<ValueId> initializers() const;

 private:
  std::unordered_map<std::string, ValueId> index_;
};

}  // namespace fusert
