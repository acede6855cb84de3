// libFuzzer target: image decoding (libpng and libjpeg-turbo through apps/preprocess/image.h) and the ImageNet
// preprocessing (resize 256, centre crop 224) of whatever decodes.
#include "apps/preprocess/image.h"
#include "tests/fuzz_loaders/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 4 Mpixel: a 4 KiB input claiming the full 64 Mpixel decodes for >10 s under ASan (a
  // libFuzzer timeout, not a bug); the default limit is tested in tests/runtime.
  auto img = fusert::decode_image(fusert::fuzz::write_scratch(data, size, ".img"), int64_t{1} << 22);
  if (!img.ok()) return 0;
  fusert::PreprocessSpec spec;
  spec.resize = 32;
  spec.crop = 24;
  (void)fusert::preprocess_image(*img, spec);
  return 0;
}
