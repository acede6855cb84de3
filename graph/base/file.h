// File checks shared by every loader (model, weights, inputs).
#pragma once

#include <string>

#include "graph/base/status.h"

namespace fusert {

/// OK if `path` names a regular file (not a directory, device or pipe); else an error
/// naming it and saying what it is. `what` is e.g. "model file".
Status check_regular_file(const std::string& path, const char* what);

}  // namespace fusert
