// Helpers shared by the runtime tests: a per-process scratch directory, raw file I/O, and
// float bit patterns.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>

namespace fusert::test {

/// A scratch directory unique to this process, removed at exit.
inline const std::string& scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() {
      path = std::filesystem::temp_directory_path() / ("fusert_runtime_test_" + std::to_string(::getpid()));
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  static const std::string s = dir.path.string();
  return s;
}

inline std::string scratch(const std::string& name) { return scratch_dir() + "/" + name; }

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  REQUIRE(f);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f);
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

/// Checks that `msg` holds every fragment, printing the message when one is missing.
inline void check_message(const std::string& msg, std::initializer_list<std::string> fragments) {
  for (const std::string& f : fragments) {
    INFO("message: " << msg);
    INFO("missing fragment: " << f);
    CHECK(contains(msg, f));
  }
}

}  // namespace fusert::test
