// Replays files through a fuzz target's LLVMFuzzerTestOneInput without libFuzzer (g++ builds,
// `make test`): every crash input found by `make fuzz` lives under regressions/<target>/.
// Arguments are files or folders; prints "N passed, 0 failed" (a crash never returns).
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::filesystem::is_directory(argv[i])) {
      for (const auto& e : std::filesystem::directory_iterator(argv[i]))
        if (e.is_regular_file()) files.push_back(e.path().string());
    } else {
      files.push_back(argv[i]);
    }
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::cout << argv[0] << ": " << files.size() << " inputs replayed\n" << files.size() << " passed, 0 failed\n";
  return 0;
}
