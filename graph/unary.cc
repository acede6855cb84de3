// Graph-side helpers for the elementwise unary ops of graph/base/unary_ops.def.
#include "graph/unary.h"

#include <string>

namespace fusert {

namespace {

const char* table_schema(OpKind op) {
  switch (op) {
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_SCHEMA_##Row(Name, Schema)
#define FUSERT_UNARY_SCHEMA_0(Name, Schema)
#define FUSERT_UNARY_SCHEMA_1(Name, Schema) \
  case OpKind::k##Name:                     \
    return Schema;
#define FUSERT_UNARY_SCHEMA_2(Name, Schema)
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_SCHEMA_0
#undef FUSERT_UNARY_SCHEMA_1
#undef FUSERT_UNARY_SCHEMA_2
    default:
      return nullptr;
  }
}

}  // namespace

bool is_table_unary(OpKind op) { return table_schema(op) != nullptr; }

void unary_params(const Node& n, float* a, float* b) {
  float* out[2] = {a, b};
  *a = *b = 0.f;
  const char* schema = table_schema(n.op);
  if (!schema) return;
  const std::string s = schema;
  size_t at = 0;
  for (int k = 0; k < 2 && at < s.size(); ++k) {
    const size_t colon = s.find(':', at), end = s.find(';', at);
    *out[k] = static_cast<float>(n.attr_f(s.substr(at, colon - at)));
    at = end == std::string::npos ? s.size() : end + 1;
  }
}

}  // namespace fusert
