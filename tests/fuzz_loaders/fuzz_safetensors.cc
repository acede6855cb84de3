// libFuzzer target: the safetensors reader (runtime/weights.h read_safetensors) on arbitrary bytes.
#include "runtime/weights.h"
#include "tests/fuzz_loaders/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = fusert::read_safetensors(fusert::fuzz::write_scratch(data, size, ".safetensors"));
  if (m.ok()) {
    for (const auto& kv : *m) {
      if (kv.second.nbytes() > 0) (void)static_cast<volatile const uint8_t*>(kv.second.raw())[kv.second.nbytes() - 1];
    }
  }
  return 0;
}
