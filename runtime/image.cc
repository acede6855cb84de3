// Image decoding through stb_image and the model-declared preprocessing.
#include "runtime/image.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_IMPLEMENTATION
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace fusert {

namespace {

// stb_image (Debian 12's) writes past a Huffman table when a JPEG DHT segment declares more
// than 256 codes (found by `make fuzz`, tests/fuzz_loaders/regressions/image/): every DHT
// segment is checked before stb sees the file. Walks every marker segment, scans skipped.
bool jpeg_tables_ok(const std::string& b) {
  // stb accepts any run of 0xFF fill bytes before the SOI marker, as before every marker.
  size_t i = 0;
  while (i < b.size() && static_cast<uint8_t>(b[i]) == 0xFF) ++i;
  if (i == 0 || i >= b.size() || static_cast<uint8_t>(b[i]) != 0xD8) return true;  // not a JPEG
  ++i;
  while (i + 4 <= b.size()) {
    if (static_cast<uint8_t>(b[i]) != 0xFF) { ++i; continue; }  // stb skips junk to the next 0xFF too
    const uint8_t marker = static_cast<uint8_t>(b[i + 1]);
    if (marker == 0xFF) { ++i; continue; }                // fill byte
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { i += 2; continue; }
    if (marker == 0xD9) return true;                       // end of image
    const size_t len = (static_cast<size_t>(static_cast<uint8_t>(b[i + 2])) << 8) | static_cast<uint8_t>(b[i + 3]);
    if (marker == 0xC4) {  // DHT, read as stb reads it: (class/id, 16 counts, symbols) while the
      auto at = [&](size_t k) -> size_t { return k < b.size() ? static_cast<uint8_t>(b[k]) : 0; };  // length lasts;
      long left = static_cast<long>(len) - 2;                                                         // 0 past the end
      for (size_t p = i + 4; left > 0;) {
        size_t codes = 0;
        for (size_t k = 1; k <= 16; ++k) codes += at(p + k);
        if (codes > 256) return false;
        p += 17 + codes;
        left -= static_cast<long>(17 + codes);
      }
    }
    if (len < 2 || i + 2 + len > b.size()) return true;
    if (marker == 0xDA) {  // start of scan: skip its entropy-coded data to the next marker
      i += 2 + len;        // (progressive files define more tables between scans)
      while (i + 1 < b.size() && !(static_cast<uint8_t>(b[i]) == 0xFF && static_cast<uint8_t>(b[i + 1]) != 0 &&
                                   !(static_cast<uint8_t>(b[i + 1]) >= 0xD0 && static_cast<uint8_t>(b[i + 1]) <= 0xD7))) ++i;
      continue;
    }
    i += 2 + len;
  }
  return true;
}

}  // namespace

Result<Tensor> decode_image(const std::string& path, int64_t max_pixels) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kParseError) << path << ": cannot read image: cannot open the file";
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) return error(StatusCode::kInvalidArgument) << path << ": image file too large";
  const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  if (!jpeg_tables_ok(bytes)) return error(StatusCode::kParseError) << path << ": cannot read image: corrupt JPEG Huffman table (more than 256 codes)";
  int w = 0, h = 0, channels = 0;
  // The header's size is checked before stb allocates for it: a 100-byte file may claim
  // 2^24 x 2^24 pixels.
  if (!stbi_info_from_memory(data, size, &w, &h, &channels)) {  // no size, no decode (a BMP whose
    return error(StatusCode::kParseError) << path << ": cannot read image: " << stbi_failure_reason();  // info failed
  }                                                                                                     // decoded 150 Mpixel)
  if (w <= 0 || h <= 0 || static_cast<int64_t>(w) * h > max_pixels) {
    return error(StatusCode::kInvalidArgument) << path << ": image of " << w << "x" << h << " pixels exceeds the "
                                               << max_pixels << "-pixel limit";
  }
  unsigned char* px = stbi_load_from_memory(data, size, &w, &h, &channels, 3);
  if (!px) return error(StatusCode::kParseError) << path << ": cannot read image: " << stbi_failure_reason();
  if (w <= 0 || h <= 0) {  // some headers decode to an empty image (found by make fuzz)
    stbi_image_free(px);
    return error(StatusCode::kParseError) << path << ": cannot read image: it has " << w << "x" << h << " pixels";
  }
  Tensor t(DType::kF32, {h, w, 3});
  const int64_t n = static_cast<int64_t>(h) * w * 3;
  for (int64_t i = 0; i < n; ++i) t.f32()[i] = static_cast<float>(px[i]);
  stbi_image_free(px);
  return t;
}

// Source coordinate of output index `o` for scale in/out, half-pixel centres, as in PyTorch's
// upsample_bilinear2d (align_corners=False): negative sources clamp to 0.
static void source_index(int64_t o, int64_t in, int64_t out, int64_t* i0, int64_t* i1, float* frac) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  float src = std::max((static_cast<float>(o) + 0.5f) * scale - 0.5f, 0.0f);
  *i0 = std::min(static_cast<int64_t>(src), in - 1);
  *i1 = std::min(*i0 + 1, in - 1);
  *frac = src - static_cast<float>(*i0);
}

Tensor resize_bilinear(const Tensor& hwc, int64_t oh, int64_t ow) {
  const int64_t h = hwc.shape()[0], w = hwc.shape()[1], c = hwc.shape()[2];
  Tensor out(DType::kF32, {oh, ow, c});
  const float* src = hwc.f32();
  float* dst = out.f32();
#pragma omp parallel for schedule(static)
  for (int64_t y = 0; y < oh; ++y) {
    int64_t y0, y1;
    float fy;
    source_index(y, h, oh, &y0, &y1, &fy);
    for (int64_t x = 0; x < ow; ++x) {
      int64_t x0, x1;
      float fx;
      source_index(x, w, ow, &x0, &x1, &fx);
      for (int64_t k = 0; k < c; ++k) {
        float a = src[(y0 * w + x0) * c + k], b = src[(y0 * w + x1) * c + k];
        float d = src[(y1 * w + x0) * c + k], e = src[(y1 * w + x1) * c + k];
        dst[(y * ow + x) * c + k] = (1.0f - fy) * ((1.0f - fx) * a + fx * b) + fy * ((1.0f - fx) * d + fx * e);
      }
    }
  }
  return out;
}

Result<Tensor> preprocess_image(const Tensor& hwc, const PreprocessSpec& spec) {
  Tensor img = hwc;
  int64_t h = img.shape()[0], w = img.shape()[1];
  if (h <= 0 || w <= 0) return error(StatusCode::kInvalidArgument) << "image of " << w << "x" << h << " pixels has nothing to preprocess";
  if (spec.resize > 0) {
    int64_t oh = h <= w ? spec.resize : h * spec.resize / w;
    int64_t ow = h <= w ? w * spec.resize / h : spec.resize;
    if (spec.resize > 16384 || oh > 65536 || ow > 65536) {
      return error(StatusCode::kInvalidArgument) << "resizing a " << w << "x" << h << " image to short side " << spec.resize
             << " gives " << ow << "x" << oh << ", larger than 65536 pixels a side";
    }
    img = resize_bilinear(img, oh, ow);
    h = oh;
    w = ow;
  }
  int64_t ch = spec.crop > 0 ? spec.crop : h, cw = spec.crop > 0 ? spec.crop : w;
  if (ch > h || cw > w) {
    return error(StatusCode::kInvalidArgument) << "image of " << h << "x" << w << " is smaller than the crop " << ch << "x" << cw;
  }
  int64_t top = (h - ch) / 2, left = (w - cw) / 2;
  Tensor out(DType::kF32, {1, 3, ch, cw});
  for (int64_t c = 0; c < 3; ++c) {
    int64_t src_c = spec.color == "BGR" ? 2 - c : c;
    float mean = static_cast<float>(spec.mean[static_cast<size_t>(c)]);
    float stdv = static_cast<float>(spec.std[static_cast<size_t>(c)]);
    float div = static_cast<float>(spec.divisor);
    for (int64_t y = 0; y < ch; ++y) {
      for (int64_t x = 0; x < cw; ++x) {
        float p = img.f32()[((top + y) * w + left + x) * 3 + src_c];
        out.f32()[(c * ch + y) * cw + x] = (p / div - mean) / stdv;
      }
    }
  }
  return out;
}

}  // namespace fusert
