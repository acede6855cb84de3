// Graph IR helpers: attribute access, value lookup, use-def links.
#include "graph/ir.h"

#include "graph/base/status.h"

namespace fusert {

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  // line 0: a file without lines (an ONNX model); `via` then names the node.
  std::string s = line == 0 ? file : file + ":" + std::to_string(line) + ":" + std::to_string(column);
  if (!via.empty()) s += " (" + via + ")";
  return s;
}

const char* init_kind_name(InitKind k) {
  switch (k) {
    case InitKind::kKaiming:
      return "kaiming";
    case InitKind::kUniform:
      return "uniform";
    case InitKind::kBnScale:
      return "bn_scale";
    case InitKind::kBnVar:
      return "bn_var";
    case InitKind::kInput:
      return "input";
    case InitKind::kZeros:
      return "zeros";
    case InitKind::kOnes:
      return "ones";
  }
  return "?";
}

bool parse_init_kind(const std::string& s, InitKind* out) {
  for (InitKind k : {InitKind::kKaiming, InitKind::kUniform, InitKind::kBnScale, InitKind::kBnVar, InitKind::kInput,
                     InitKind::kZeros, InitKind::kOnes}) {
    if (s == init_kind_name(k)) {
      *out = k;
      return true;
    }
  }
  return false;
}

static const AttrValue& get_attr(const Node& n, const std::string& name, AttrType type) {
  auto it = n.attrs.find(name);
  FUSERT_CHECK(it != n.attrs.end()) << "node " << n.name << " has no attribute " << name;
  FUSERT_CHECK(it->second.type == type) << "node " << n.name << " attribute " << name << " type";
  return it->second;
}

int64_t Node::attr_i(const std::string& n) const { return get_attr(*this, n, AttrType::kInt).i; }
double Node::attr_f(const std::string& n) const { return get_attr(*this, n, AttrType::kFloat).f; }
const std::vector<int64_t>& Node::attr_ints(const std::string& n) const {
  return get_attr(*this, n, AttrType::kInts).ints;
}
const std::string& Node::attr_s(const std::string& n) const { return get_attr(*this, n, AttrType::kString).s; }

ValueId Graph::find_value(const std::string& n) const {
  auto it = index_.find(n);
  return it == index_.end() ? kNoValue : it->second;
}

ValueId Graph::add_value(const std::string& n) {
  ValueId id = find_value(n);
  if (id != kNoValue) return id;
  Value v;
  v.name = n;
  values.push_back(std::move(v));
  id = static_cast<ValueId>(values.size() - 1);
  index_[n] = id;
  return id;
}

void Graph::rebuild_links() {
  index_.clear();
  for (size_t i = 0; i < values.size(); ++i) index_[values[i].name] = static_cast<ValueId>(i);
  for (Value& v : values) {
    v.producer = -1;
    v.consumers.clear();
    v.is_graph_output = false;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId in : nodes[i].inputs) {
      if (in != kNoValue) value(in).consumers.push_back(static_cast<int>(i));
    }
    for (ValueId out : nodes[i].outputs) value(out).producer = static_cast<int>(i);
  }
  for (ValueId o : outputs) value(o).is_graph_output = true;
}

std::vector<ValueId> Graph::initializers() const {
  std::vector<ValueId> out;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].is_initializer) out.push_back(static_cast<ValueId>(i));
  }
  return out;
}

}  // namespace fusert
