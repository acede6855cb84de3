// Error values crossing module boundaries (loader, weights, backend init, run), and the
// FUSERT_CHECK macro for broken internal invariants (aborts with file:line).
#pragma once

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

namespace fusert {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // bad user input: CLI flag, attribute, tensor
  kParseError,       // malformed file (YAML, safetensors, npy, image)
  kNotFound,         // missing file, value, weight
  kShapeMismatch,    // shapes do not agree
  kUnsupported,      // valid but not implemented (op, dtype, device)
  kIoError,          // read/write failure
  kDeviceError,      // no GPU, driver or library failure
  kInternal,
};

const char* status_code_name(StatusCode code);

/// A success or an error with a human-readable message naming the file/line/node/tensor.
class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok_status() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// A value or an error Status.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return *value_; }
  const T& value() const& { return *value_; }
  T&& value() && { return std::move(*value_); }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

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
