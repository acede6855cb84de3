// File checks shared by every loader.
#include "graph/base/file.h"

#include <filesystem>

namespace fusert {

Status check_regular_file(const std::string& path, const char* what) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return error(StatusCode::kNotFound) << path << ": cannot open " << what;
  if (std::filesystem::is_directory(st))
    return error(StatusCode::kInvalidArgument) << path << ": is a directory, not a file (" << what << ")";
  if (!std::filesystem::is_regular_file(st))
    return error(StatusCode::kInvalidArgument) << path << ": is not a regular file (" << what << ")";
  return Status();
}

}  // namespace fusert
