// Op kinds, pattern kinds and attribute schemas, all generated from graph/ops.def.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fusert {

enum class OpKind {
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) k##name,
#include "graph/ops.def"
#undef FUSERT_OP
  kCount
};

/// Fusion pattern kinds, ordered (TVM's TOpPattern): legality rules compare them with < and >.
enum class PatternKind { kElementwise = 0, kBroadcast, kInjective, kReduction, kAnchor, kOpaque };
const char* pattern_kind_name(PatternKind p);

enum class AttrType { kInt, kFloat, kInts, kFloats, kString };
const char* attr_type_name(AttrType t);

/// Value of one attribute (only the field matching `type` is meaningful).
struct AttrValue {
  AttrType type = AttrType::kInt;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  std::string s;
};

struct AttrSchema {
  std::string name;
  AttrType type;
  bool required = false;
  AttrValue default_value;  // meaningful when !required
};

/// One row of the op table.
struct OpInfo {
  OpKind kind;
  const char* name;
  PatternKind pattern;
  int min_inputs, max_inputs;
  int max_outputs;
  std::vector<AttrSchema> attrs;
  const char* doc;
  const AttrSchema* find_attr(const std::string& name) const;
};

const OpInfo& op_info(OpKind kind);
/// Looks an op up by its ONNX name; returns false when unknown.
bool find_op(const std::string& name, OpKind* out);
/// All op names, comma separated, for "unknown op" errors.
std::string known_op_names();
const char* op_name(OpKind kind);
/// Reshape/Flatten/Unsqueeze/Identity: views of their input, no kernel.
bool is_alias_op(OpKind op);

}  // namespace fusert
