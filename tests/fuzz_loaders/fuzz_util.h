// Shared by the libFuzzer targets of the loaders (tests/fuzz_loaders): the readers take paths,
// so each input is written to a per-process scratch file first.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace fusert::fuzz {

inline const std::string& scratch_file(const char* ext) {
  static const std::string path = std::string(access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") + "/fusert_fuzz_" +
                                  std::to_string(::getpid()) + ext;
  return path;
}

inline const std::string& write_scratch(const uint8_t* data, size_t size, const char* ext) {
  const std::string& path = scratch_file(ext);
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f) {
    if (size) std::fwrite(data, 1, size, f);
    std::fclose(f);
  }
  return path;
}

}  // namespace fusert::fuzz
