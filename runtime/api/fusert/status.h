// fusert's public error values: a StatusCode and message (Status), or a value (Result<T>).
// Every call of the public API that can fail returns one of them; none throws.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "fusert/export.h"

namespace fusert {

/// What went wrong, by kind; Status::message() names the file, line, node or tensor.
enum class StatusCode {
  kOk = 0,           ///< success
  kInvalidArgument,  ///< bad user input: option, attribute, tensor name or dtype
  kParseError,       ///< malformed file (YAML, safetensors, npy, image)
  kNotFound,         ///< missing file, value, weight
  kShapeMismatch,    ///< shapes do not agree (an input's shape, a weight's shape)
  kUnsupported,      ///< valid but not implemented (op, dtype, device feature)
  kIoError,          ///< read/write failure, or out of memory while loading
  kDeviceError,      ///< no GPU, driver or library failure
  kInternal,         ///< a bug in fusert: please report it with the message
};

/// "ok", "invalid argument", ... (the enumerator without its k, in words).
FUSERT_API const char* status_code_name(StatusCode code);

/// A success or an error with a human-readable message naming the file/line/node/tensor.
class FUSERT_API Status {
 public:
  /// Success.
  Status() = default;
  /// An error (or success for StatusCode::kOk) with its message.
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  /// Success, spelled out.
  static Status ok_status() { return {}; }
  /// True for success.
  bool ok() const { return code_ == StatusCode::kOk; }
  /// The error's kind (kOk for success).
  StatusCode code() const { return code_; }
  /// The error's text without its kind, e.g. "models/x.yaml:12:5: unknown op 'Foo'".
  const std::string& message() const { return message_; }
  /// "ok", or the kind and the message: "not found: weights.safetensors: no such file".
  std::string to_string() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

/// A value or an error Status. Check ok() before touching the value: value(), operator-> and
/// operator* on an error are undefined behaviour.
template <typename T>
class Result {
 public:
  /// Success holding `value`.
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  /// An error; an ok `status` becomes a kInternal error (a Result must hold one or the other).
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    if (status_.ok()) status_ = Status(StatusCode::kInternal, "Result built from an ok Status");
  }
  /// True when a value is held.
  bool ok() const { return status_.ok(); }
  /// The error, or an ok Status.
  const Status& status() const { return status_; }
  /// The value (ok() only).
  T& value() & { return *value_; }
  /// The value (ok() only).
  const T& value() const& { return *value_; }
  /// The value, moved out (ok() only).
  T&& value() && { return std::move(*value_); }
  /// The value's members (ok() only).
  T* operator->() { return &*value_; }
  /// The value's members (ok() only).
  const T* operator->() const { return &*value_; }
  /// The value (ok() only).
  T& operator*() { return *value_; }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace fusert
