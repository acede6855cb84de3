// Error values crossing module boundaries (loader, weights, backend init, run): Status and
// Result<T> are public (fusert/status.h); here the error builder, the FUSERT_RETURN_IF_ERROR /
// FUSERT_ASSIGN_OR_RETURN macros and FUSERT_CHECK for broken internal invariants (aborts with
// file:line).
#pragma once

#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>

#include "fusert/status.h"

namespace fusert {

/// Builds an error message with stream syntax: `return error(StatusCode::kNotFound) << "x";`
class ErrorBuilder {
 public:
  explicit ErrorBuilder(StatusCode code) : code_(code) {}
  template <typename V>
  ErrorBuilder& operator<<(const V& v) {
    os_ << v;
    return *this;
  }
  operator Status() const { return Status(code_, os_.str()); }  // NOLINT
  template <typename T>
  operator Result<T>() const {  // NOLINT
    return Result<T>(Status(code_, os_.str()));
  }

 private:
  StatusCode code_;
  std::ostringstream os_;
};
inline ErrorBuilder error(StatusCode code) { return ErrorBuilder(code); }

namespace detail {
/// Collects the message of a failed FUSERT_CHECK and aborts in its destructor.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": internal check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << os_.str() << std::endl;
    std::abort();
  }
  template <typename V>
  CheckFailure& operator<<(const V& v) {
    os_ << v;
    return *this;
  }

 private:
  std::ostringstream os_;
};
}  // namespace detail

}  // namespace fusert

#define FUSERT_RETURN_IF_ERROR(expr)         \
  do {                                       \
    ::fusert::Status _fusert_st = (expr);    \
    if (!_fusert_st.ok()) return _fusert_st; \
  } while (0)

#define FUSERT_CONCAT_INNER(a, b) a##b
#define FUSERT_CONCAT(a, b) FUSERT_CONCAT_INNER(a, b)
#define FUSERT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
/// `FUSERT_ASSIGN_OR_RETURN(auto x, f());` unwraps a Result or returns its error. It expands to
/// several statements: inside an `if`, use braces.
#define FUSERT_ASSIGN_OR_RETURN(lhs, expr) FUSERT_ASSIGN_OR_RETURN_IMPL(FUSERT_CONCAT(_fusert_r, __LINE__), lhs, expr)

#define FUSERT_CHECK(cond) \
  if (cond) {              \
  } else                   \
    ::fusert::detail::CheckFailure(__FILE__, __LINE__, #cond)
