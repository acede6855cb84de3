// libFuzzer target: the .npy reader (runtime/npy.h read_npy) on arbitrary bytes.
#include "graph/base/tensor.h"
#include "runtime/npy.h"
#include "tests/fuzz_loaders/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = fusert::read_npy(fusert::fuzz::write_scratch(data, size, ".npy"));
  if (t.ok()) {
    volatile int64_t n = t->numel();  // the tensor is whole: touch its last byte
    if (n > 0) (void)static_cast<volatile const uint8_t*>(t->raw())[t->nbytes() - 1];
  }
  return 0;
}
