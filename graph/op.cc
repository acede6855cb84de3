// Builds the op table from graph/ops.def: parses each row's attribute schema once.
#include "graph/op.h"

#include <cstdlib>
#include <sstream>

#include "graph/base/status.h"

namespace fusert {

namespace {

constexpr int kOpCount = 0
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) +1
#include "graph/ops.def"
#undef FUSERT_OP
    ;
static_assert(kOpCount == static_cast<int>(OpKind::kCount), "ops.def and OpKind disagree");

std::vector<double> parse_doubles(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) out.push_back(std::strtod(tok.c_str(), nullptr));
  return out;
}

AttrSchema parse_one(const std::string& item) {
  AttrSchema a;
  size_t colon = item.find(':');
  FUSERT_CHECK(colon != std::string::npos) << "bad schema item " << item;
  a.name = item.substr(0, colon);
  size_t eq = item.find('=', colon);
  std::string type = item.substr(colon + 1, eq == std::string::npos ? std::string::npos : eq - colon - 1);
  a.required = eq == std::string::npos;
  std::string def = a.required ? "" : item.substr(eq + 1);
  if (type == "int")
    a.type = AttrType::kInt;
  else if (type == "float")
    a.type = AttrType::kFloat;
  else if (type == "ints")
    a.type = AttrType::kInts;
  else if (type == "floats")
    a.type = AttrType::kFloats;
  else if (type == "string")
    a.type = AttrType::kString;
  else
    FUSERT_CHECK(false) << "bad schema type " << type;
  a.default_value.type = a.type;
  if (!a.required) {
    std::vector<double> d = parse_doubles(def);
    if (a.type == AttrType::kInt) a.default_value.i = std::atoll(def.c_str());
    if (a.type == AttrType::kFloat) a.default_value.f = std::strtod(def.c_str(), nullptr);
    if (a.type == AttrType::kInts)
      for (double v : d) a.default_value.ints.push_back(static_cast<int64_t>(v));
    if (a.type == AttrType::kFloats) a.default_value.floats = d;
    if (a.type == AttrType::kString) a.default_value.s = def;
  }
  return a;
}

std::vector<AttrSchema> parse_schema(const char* schema) {
  std::vector<AttrSchema> out;
  std::stringstream ss(schema);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (!item.empty()) out.push_back(parse_one(item));
  }
  return out;
}

const std::vector<OpInfo>& table() {
  static const std::vector<OpInfo> t = {
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) \
  {OpKind::k##name, #name, PatternKind::pattern, min_in, max_in, max_out, parse_schema(schema), doc},
#include "graph/ops.def"
#undef FUSERT_OP
  };
  return t;
}

}  // namespace

const char* pattern_kind_name(PatternKind p) {
  switch (p) {
    case PatternKind::kElementwise:
      return "elementwise";
    case PatternKind::kBroadcast:
      return "broadcast";
    case PatternKind::kInjective:
      return "injective";
    case PatternKind::kReduction:
      return "reduction";
    case PatternKind::kAnchor:
      return "anchor";
    case PatternKind::kOpaque:
      return "opaque";
  }
  return "?";
}

const char* attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kString:
      return "string";
  }
  return "?";
}

const AttrSchema* OpInfo::find_attr(const std::string& n) const {
  for (const AttrSchema& a : attrs) {
    if (a.name == n) return &a;
  }
  return nullptr;
}

const OpInfo& op_info(OpKind kind) { return table()[static_cast<size_t>(kind)]; }
const char* op_name(OpKind kind) { return op_info(kind).name; }

bool find_op(const std::string& name, OpKind* out) {
  for (const OpInfo& o : table()) {
    if (name == o.name) {
      *out = o.kind;
      return true;
    }
  }
  return false;
}

std::string known_op_names() {
  std::string s;
  for (const OpInfo& o : table()) s += (s.empty() ? "" : ", ") + std::string(o.name);
  return s;
}

bool is_alias_op(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kFlatten || op == OpKind::kUnsqueeze || op == OpKind::kIdentity;
}

}  // namespace fusert
