// Status names and formatting.
#include "graph/base/status.h"

namespace fusert {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidArgument:
      return "invalid argument";
    case StatusCode::kParseError:
      return "parse error";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kShapeMismatch:
      return "shape mismatch";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kIoError:
      return "I/O error";
    case StatusCode::kDeviceError:
      return "device error";
    case StatusCode::kInternal:
      return "internal error";
  }
  return "unknown";
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(code_)) + ": " + message_;
}

}  // namespace fusert
