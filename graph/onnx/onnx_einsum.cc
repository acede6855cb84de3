// Einsum as Transpose, ReduceSum, Reshape and MatMul (graph/onnx/onnx_einsum.h).
#include "graph/onnx/onnx_einsum.h"

#include <algorithm>
#include <map>

#include "graph/onnx/onnx_folded.h"

namespace fusert::onnx_import {

namespace {

// An operand during the rewrite: its value and the letter of each dim.
struct Term {
  std::string value;
  std::string letters;
};

class EinsumWriter {
 public:
  EinsumWriter(const Graph& g, const std::string& name, const SourceLoc& loc) : g_(g), name_(name), loc_(loc) {}

  // The equation's operand letters ("..." replaced by capital letters per operand rank) and the
  // output's.
  Status parse(const std::string& eq, const std::vector<Shape>& shapes, std::vector<std::string>* ins,
               std::string* out) {
    std::string lhs = eq, rhs;
    const size_t arrow = eq.find("->");
    const bool explicit_out = arrow != std::string::npos;
    if (explicit_out) {
      lhs = eq.substr(0, arrow);
      rhs = eq.substr(arrow + 2);
    }
    std::vector<std::string> terms;
    size_t start = 0;
    for (size_t k = 0; k <= lhs.size(); ++k) {
      if (k == lhs.size() || lhs[k] == ',') {
        terms.push_back(strip(lhs.substr(start, k - start)));
        start = k + 1;
      }
    }
    if (terms.size() != shapes.size()) {
      return error(StatusCode::kParseError) << loc_.str() << ": equation '" << eq << "' has " << terms.size()
                                            << " operands, the node " << shapes.size() << " inputs";
    }
    size_t ell = 0;  // dims "..." stands for: the most any operand has
    for (size_t i = 0; i < terms.size(); ++i) {
      FUSERT_ASSIGN_OR_RETURN(size_t n, ellipsis_dims(eq, terms[i], shapes[i].size()));
      ell = std::max(ell, n);
    }
    std::string ell_letters;
    for (size_t d = 0; d < ell; ++d) ell_letters += static_cast<char>('A' + d);
    for (const std::string& t : terms) {  // right-aligned: an operand's "..." is the last of them
      const size_t dots = t.find("...");
      const size_t n = dots == std::string::npos ? 0 : shapes[ins->size()].size() - (t.size() - 3);
      ins->push_back(dots == std::string::npos ? t
                                               : t.substr(0, dots) + ell_letters.substr(ell - n) + t.substr(dots + 3));
    }
    if (explicit_out) {
      rhs = strip(rhs);
      const size_t dots = rhs.find("...");
      *out = dots == std::string::npos ? rhs : rhs.substr(0, dots) + ell_letters + rhs.substr(dots + 3);
    } else {  // implicit: "..." first, then the letters that occur once, sorted
      std::map<char, int> count;
      for (const std::string& t : *ins)
        for (char c : t) ++count[c];
      *out = ell_letters;
      for (const auto& [c, n] : count)
        if (n == 1 && (c < 'A' || c > 'Z')) *out += c;
    }
    for (const std::string& t : *ins) {
      for (size_t k = 0; k < t.size(); ++k) {
        if (t.find(t[k], k + 1) != std::string::npos)
          return error(StatusCode::kUnsupported) << loc_.str() << ": equation '" << eq << "' repeats '" << t[k]
                                                 << "' in one operand (a diagonal; fusert's Einsum contracts only)";
      }
    }
    return Status();
  }

  // Records each letter's size; a letter with two sizes is an error.
  Status sizes(const std::vector<std::string>& ins, const std::vector<Shape>& shapes) {
    for (size_t i = 0; i < ins.size(); ++i) {
      for (size_t d = 0; d < ins[i].size(); ++d) {
        const char c = ins[i][d];
        const int64_t n = shapes[i][d];
        auto it = size_.find(c);
        if (it != size_.end() && it->second != n) {
          const bool dots = c >= 'A' && c <= 'Z';  // a dim of "..."
          return error(StatusCode::kShapeMismatch)
                 << loc_.str() << ": " << (dots ? "a dim of '...'" : std::string("letter '") + c + "'") << " is "
                 << it->second << " in one operand and " << n << " in operand " << i
                 << " (fusert's Einsum does not broadcast a size-1 dim)";
        }
        size_[c] = n;
      }
    }
    return Status();
  }

  // `t` with the letters not in `keep` summed out.
  Term reduce(const Term& t, const std::string& keep) {
    std::vector<int64_t> axes;
    std::string left;
    for (size_t d = 0; d < t.letters.size(); ++d) {
      if (keep.find(t.letters[d]) == std::string::npos)
        axes.push_back(static_cast<int64_t>(d));
      else
        left += t.letters[d];
    }
    if (axes.empty()) return t;
    const std::string ax = constant("sum_axes", i64_tensor(axes)), out = value("sum");
    onnx::NodeProto n = make_node("ReduceSum", name_ + "/sum" + std::to_string(e_.nodes.size()), {t.value, ax}, {out});
    int_attr(&n, "keepdims", 0);
    e_.nodes.push_back(n);
    return Term{out, left};
  }

  // `t` with its letters in the order `want` (a permutation of them).
  Term transpose(const Term& t, const std::string& want, const std::string& out_name = "") {
    if (t.letters == want && out_name.empty()) return t;
    onnx::NodeProto n;
    const std::string out = out_name.empty() ? value("transpose") : out_name;
    if (t.letters == want) {
      n = make_node("Identity", name_ + "/out", {t.value}, {out});
    } else {
      n = make_node("Transpose", name_ + "/transpose" + std::to_string(e_.nodes.size()), {t.value}, {out});
      auto* a = n.add_attribute();
      a->set_name("perm");
      a->set_type(onnx::AttributeProto::INTS);
      for (char c : want) a->add_ints(static_cast<int64_t>(t.letters.find(c)));
    }
    e_.nodes.push_back(n);
    return Term{out, want};
  }

  // a x b, keeping the letters in `keep` (needed later): one MatMul.
  Term contract(Term a, Term b, const std::string& keep) {
    const auto in = [](const std::string& s, char c) { return s.find(c) != std::string::npos; };
    std::string batch, m, k, n;
    a = reduce(a, keep + b.letters);
    b = reduce(b, keep + a.letters);
    for (char c : a.letters) {
      if (in(b.letters, c))
        (in(keep, c) ? batch : k) += c;
      else
        m += c;
    }
    for (char c : b.letters)
      if (!in(a.letters, c)) n += c;
    a = reshape(transpose(a, batch + m + k), batch, {m, k});
    b = reshape(transpose(b, batch + k + n), batch, {k, n});
    const std::string prod = value("matmul");
    e_.nodes.push_back(
        make_node("MatMul", name_ + "/matmul" + std::to_string(e_.nodes.size()), {a.value, b.value}, {prod}));
    Term r{prod, ""};
    std::vector<int64_t> dims;
    for (char c : batch + m + n) dims.push_back(size_.at(c));
    return Term{reshape_to(r.value, dims), batch + m + n};
  }

  Expansion take() { return std::move(e_); }

 private:
  static std::string strip(const std::string& s) {
    std::string r;
    for (char c : s)
      if (c != ' ') r += c;
    return r;
  }

  // The dims an operand's "..." stands for (0 without one); checks its letters.
  Result<size_t> ellipsis_dims(const std::string& eq, const std::string& t, size_t rank) {
    const size_t dots = t.find("...");
    for (size_t k = 0; k < t.size(); ++k) {
      const char c = t[k];
      const bool in_dots = dots != std::string::npos && k >= dots && k < dots + 3;
      if (c >= 'A' && c <= 'Z')
        return error(StatusCode::kUnsupported)
               << loc_.str() << ": equation '" << eq << "' uses capital letters (fusert keeps them for '...')";
      if (!in_dots && !(c >= 'a' && c <= 'z'))
        return error(StatusCode::kParseError) << loc_.str() << ": equation '" << eq << "' is malformed: operand '" << t
                                              << "' has '" << c << "' (letters a-z and one '...')";
    }
    const size_t named = t.size() - (dots == std::string::npos ? 0 : 3);
    if ((dots == std::string::npos && named != rank) || (dots != std::string::npos && named > rank)) {
      return error(StatusCode::kShapeMismatch) << loc_.str() << ": operand '" << t << "' of equation '" << eq
                                               << "' names " << named << " dims of a rank-" << rank << " input";
    }
    return dots == std::string::npos ? 0 : rank - named;
  }

  // [batch.., prod(groups[0]), prod(groups[1])].
  Term reshape(const Term& t, const std::string& batch, const std::vector<std::string>& groups) {
    std::vector<int64_t> dims;
    for (char c : batch) dims.push_back(size_.at(c));
    for (const std::string& grp : groups) {
      int64_t p = 1;
      for (char c : grp) p *= size_.at(c);
      dims.push_back(p);
    }
    return Term{reshape_to(t.value, dims), t.letters};
  }

  std::string reshape_to(const std::string& v, const std::vector<int64_t>& dims) {
    const std::string shape = constant("shape", i64_tensor(dims)), out = value("reshape");
    e_.nodes.push_back(make_node("Reshape", name_ + "/reshape" + std::to_string(e_.nodes.size()), {v, shape}, {out}));
    return out;
  }

  std::string constant(const std::string& base, Tensor t) {
    const std::string n = fresh_name(g_, e_, name_ + "/" + base);
    e_.constants.emplace_back(n, std::move(t));
    return n;
  }
  std::string value(const std::string& base) {
    const std::string n = fresh_name(g_, e_, name_ + "/" + base + std::to_string(e_.nodes.size()));
    return n;
  }
  static void int_attr(onnx::NodeProto* n, const std::string& a, int64_t v) {
    auto* p = n->add_attribute();
    p->set_name(a);
    p->set_type(onnx::AttributeProto::INT);
    p->set_i(v);
  }

  const Graph& g_;
  std::string name_;
  SourceLoc loc_;
  std::map<char, int64_t> size_;
  Expansion e_;
};

}  // namespace

Result<Expansion> einsum(const Graph& g, const onnx::NodeProto& np, const std::string& name, const SourceLoc& loc) {
  const auto* eq = find_attr(np, "equation");
  if (!eq) return error(StatusCode::kParseError) << loc.str() << ": Einsum needs the attribute 'equation'";
  std::vector<Shape> shapes;
  for (const std::string& in : np.input()) {
    const ValueId v = g.find_value(in);
    if (v == kNoValue) return error(StatusCode::kParseError) << loc.str() << ": input '" << in << "' is not computed";
    if (g.value(v).dtype != DType::kF32)
      return error(StatusCode::kUnsupported) << loc.str() << ": input '" << in << "' is "
                                             << dtype_name(g.value(v).dtype) << " (fusert's Einsum computes in f32)";
    shapes.push_back(g.value(v).shape);
  }
  if (shapes.empty()) return error(StatusCode::kParseError) << loc.str() << ": Einsum has no inputs";
  EinsumWriter w(g, name, loc);
  std::vector<std::string> ins;
  std::string out;
  FUSERT_RETURN_IF_ERROR(w.parse(eq->s(), shapes, &ins, &out));
  FUSERT_RETURN_IF_ERROR(w.sizes(ins, shapes));
  for (char c : out) {
    bool found = false;
    for (const std::string& t : ins) found |= t.find(c) != std::string::npos;
    if (!found || out.find(c) != out.rfind(c))
      return error(StatusCode::kParseError)
             << loc.str() << ": output letter '" << c << "' of '" << eq->s() << "' is not an operand's, or repeats";
  }
  Term acc{np.input(0), ins[0]};
  for (size_t i = 1; i < ins.size(); ++i) {
    std::string keep = out;  // letters the output or a later operand needs
    for (size_t j = i + 1; j < ins.size(); ++j) keep += ins[j];
    acc = w.contract(acc, Term{np.input(static_cast<int>(i)), ins[i]}, keep);
  }
  acc = w.reduce(acc, out);
  w.transpose(acc, out, np.output(0));
  Expansion e = w.take();
  e.opset = 13;
  return e;
}

}  // namespace fusert::onnx_import
