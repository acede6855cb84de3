// A tiny recursive-descent evaluator for `${expr}` in templates.
#include "graph/loader/substitute.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>

namespace fusert {

namespace {

class ExprParser {
 public:
  ExprParser(const std::string& s, const Bindings& env) : s_(s), env_(env) {}

  Result<int64_t> parse() {
    int64_t v = 0;
    FUSERT_RETURN_IF_ERROR(sum(&v));
    skip();
    if (pos_ != s_.size()) return error(StatusCode::kParseError) << "unexpected '" << s_.substr(pos_) << "'";
    return v;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool eat(char ch) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == ch) {
      ++pos_;
      return true;
    }
    return false;
  }
  Status sum(int64_t* v) {
    FUSERT_RETURN_IF_ERROR(product(v));
    for (;;) {
      int64_t r = 0;
      if (eat('+')) {
        FUSERT_RETURN_IF_ERROR(product(&r));
        if (__builtin_add_overflow(*v, r, v)) return overflow();
      } else if (eat('-')) {
        FUSERT_RETURN_IF_ERROR(product(&r));
        if (__builtin_sub_overflow(*v, r, v)) return overflow();
      } else {
        return Status();
      }
    }
  }
  Status product(int64_t* v) {
    FUSERT_RETURN_IF_ERROR(atom(v));
    for (;;) {
      int64_t r = 0;
      char op = 0;
      if (eat('*'))
        op = '*';
      else if (eat('/'))
        op = '/';
      else if (eat('%'))
        op = '%';
      else
        return Status();
      FUSERT_RETURN_IF_ERROR(atom(&r));
      if (op != '*' && r == 0) return error(StatusCode::kParseError) << "division by zero";
      if (op != '*' && r == -1 && *v == INT64_MIN) return overflow();
      if (op == '*') {
        if (__builtin_mul_overflow(*v, r, v)) return overflow();
      } else {
        *v = op == '/' ? *v / r : *v % r;
      }
    }
  }
  Status overflow() const { return error(StatusCode::kParseError) << "integer overflow"; }
  Status atom(int64_t* v) {
    if (++depth_ > 200) return error(StatusCode::kParseError) << "expression nested deeper than 200";
    struct Leave {
      int& d;
      ~Leave() { --d; }
    } leave{depth_};
    skip();
    if (eat('(')) {
      FUSERT_RETURN_IF_ERROR(sum(v));
      if (!eat(')')) return error(StatusCode::kParseError) << "missing ')'";
      return Status();
    }
    if (eat('-')) {
      FUSERT_RETURN_IF_ERROR(atom(v));
      if (*v == INT64_MIN) return overflow();
      *v = -*v;
      return Status();
    }
    size_t start = pos_;
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      errno = 0;
      *v = std::strtoll(s_.substr(start, pos_ - start).c_str(), nullptr, 10);
      if (errno == ERANGE) return overflow();
      return Status();
    }
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) ++pos_;
    if (start == pos_) return error(StatusCode::kParseError) << "expected a number or parameter name";
    std::string name = s_.substr(start, pos_ - start);
    auto it = env_.find(name);
    if (it == env_.end()) return error(StatusCode::kParseError) << "unknown parameter '" << name << "'";
    char* end = nullptr;
    *v = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0') {
      return error(StatusCode::kParseError) << "parameter '" << name << "' = '" << it->second << "' is not an integer";
    }
    return Status();
  }

  const std::string& s_;
  const Bindings& env_;
  size_t pos_ = 0;
  int depth_ = 0;
};

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') return false;
  return true;
}

}  // namespace

Result<std::string> substitute(const std::string& text, const Bindings& env) {
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find("${", pos);
    if (open == std::string::npos) {
      out += text.substr(pos);
      break;
    }
    size_t close = text.find('}', open);
    if (close == std::string::npos) return error(StatusCode::kParseError) << "unterminated '${' in '" << text << "'";
    out += text.substr(pos, open - pos);
    std::string expr = text.substr(open + 2, close - open - 2);
    std::string trimmed = expr;
    trimmed.erase(0, trimmed.find_first_not_of(' '));
    trimmed.erase(trimmed.find_last_not_of(' ') + 1);
    if (is_identifier(trimmed)) {
      auto it = env.find(trimmed);
      if (it == env.end())
        return error(StatusCode::kParseError) << "unknown parameter '" << trimmed << "' in '" << text << "'";
      out += it->second;
    } else {
      ExprParser p(expr, env);
      auto v = p.parse();
      if (!v.ok()) return error(StatusCode::kParseError) << "in '${" << expr << "}': " << v.status().message();
      out += std::to_string(v.value());
    }
    pos = close + 1;
  }
  return out;
}

}  // namespace fusert
