// Image decoding (libpng, libjpeg-turbo) and the model-declared preprocessing.
#include "apps/preprocess/image.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

#include <jerror.h>
#include <jpeglib.h>  // libjpeg-turbo (Debian libjpeg62-turbo-dev), the JPEG decoder Pillow uses
#include <png.h>      // libpng 1.6

namespace fusert {

namespace {

// Both decoders report errors through longjmp (libpng's and libjpeg's own protocol): the
// functions holding a setjmp below keep no object with a destructor in their frame, and every
// resource they own is released on the error path. `Decoded` lives in the caller.
struct Decoded {
  std::vector<uint8_t> rgb;  // h x w x 3
  std::vector<uint8_t*> rows;
  uint32_t w = 0, h = 0;
  bool too_large = false;
  char error[JMSG_LENGTH_MAX + 64] = {0};
};

// ---- PNG (libpng): 8-bit RGB out of every colour type and bit depth, as Pillow's
// Image.convert("RGB") gives it: palette expanded, gray replicated, alpha dropped (not
// composited), 16-bit reduced to its high byte, no gamma correction.
struct PngSource {
  const uint8_t* data;
  size_t size, pos;
};

void png_read_memory(png_structp png, png_bytep out, size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "the file ends early (truncated)");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

void png_fail(png_structp png, png_const_charp msg) {
  auto* d = static_cast<Decoded*>(png_get_error_ptr(png));
  std::snprintf(d->error, sizeof d->error, "%s", msg);
  png_longjmp(png, 1);
}

void png_ignore_warning(png_structp, png_const_charp) {}

bool decode_png(const uint8_t* data, size_t size, int64_t max_pixels, Decoded* d) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, d, png_fail, png_ignore_warning);
  if (!png) return std::snprintf(d->error, sizeof d->error, "out of memory"), false;
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return std::snprintf(d->error, sizeof d->error, "out of memory"), false;
  }
  PngSource src{data, size, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &src, png_read_memory);
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_read_info(png, info);
  d->w = png_get_image_width(png, info);
  d->h = png_get_image_height(png, info);
  if (d->w == 0 || d->h == 0 || static_cast<int64_t>(d->w) * d->h > max_pixels) {
    d->too_large = true;  // checked before any pixel memory is allocated
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  const int color = png_get_color_type(png, info);
  const int depth = png_get_bit_depth(png, info);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (depth == 16) png_set_strip_16(png);
  // tRNS becomes an alpha channel when palette_to_rgb expands it; dropped like any alpha.
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
  if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(d->w) * 3)
    png_error(png, "unexpected row layout after conversion to RGB");
  d->rgb.resize(static_cast<size_t>(d->w) * d->h * 3);  // at most max_pixels x 3 bytes
  d->rows.resize(d->h);
  for (uint32_t y = 0; y < d->h; ++y) d->rows[y] = d->rgb.data() + static_cast<size_t>(y) * d->w * 3;
  png_read_image(png, d->rows.data());
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

// ---- JPEG (libjpeg-turbo): RGB output, libjpeg's defaults (accurate integer IDCT, fancy
// upsampling) as Pillow decodes. Warnings that mean pixels were invented (the file ends early,
// corrupt entropy-coded data) are errors: a truncated photo must not classify as half gray.
struct JpegErrors {
  jpeg_error_mgr pub;
  jmp_buf jump;
  Decoded* d;
};

constexpr int kMaxJpegScans = 500;  // a crafted progressive file may hold ~10^5 tiny scans (seconds each)

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->d->error);
  std::longjmp(e->jump, 1);
}

void jpeg_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  const int code = cinfo->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE ||
      code == JWRN_BOGUS_PROGRESSION || code == JWRN_MUST_RESYNC || code == JWRN_NOT_SEQUENTIAL) {
    jpeg_fail(cinfo);
  }
}

void jpeg_progress(j_common_ptr cinfo) {
  auto* dc = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (dc->input_scan_number > kMaxJpegScans) {
    auto* e = reinterpret_cast<JpegErrors*>(cinfo->err);
    std::snprintf(e->d->error, sizeof e->d->error, "more than %d progressive scans", kMaxJpegScans);
    std::longjmp(e->jump, 1);
  }
}

bool decode_jpeg(const uint8_t* data, size_t size, int64_t max_pixels, Decoded* d) {
  jpeg_decompress_struct cinfo;
  JpegErrors err;
  jpeg_progress_mgr progress;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = jpeg_fail;
  err.pub.emit_message = jpeg_message;
  err.d = d;
  progress.progress_monitor = jpeg_progress;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  d->w = cinfo.image_width;
  d->h = cinfo.image_height;
  if (d->w == 0 || d->h == 0 || static_cast<int64_t>(d->w) * d->h > max_pixels) {
    d->too_large = true;  // checked before any pixel memory is allocated
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  if (cinfo.output_components != 3 || cinfo.output_width != d->w || cinfo.output_height != d->h) {
    std::snprintf(d->error, sizeof d->error, "unexpected JPEG output layout");
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  d->rgb.resize(static_cast<size_t>(d->w) * d->h * 3);  // at most max_pixels x 3 bytes
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = d->rgb.data() + static_cast<size_t>(cinfo.output_scanline) * d->w * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

}  // namespace

Result<Tensor> decode_image(const std::string& path, int64_t max_pixels) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return error(StatusCode::kNotFound) << path << ": cannot read image: no such file (or not a regular file)";
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot read image: cannot open the file (permissions?)";
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.eof() && f.fail()) return error(StatusCode::kParseError) << path << ": cannot read image: read error";
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  static const uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  const bool is_png = size >= 8 && std::memcmp(data, kPngSignature, 8) == 0;
  const bool is_jpeg = size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
  if (!is_png && !is_jpeg) {
    return error(StatusCode::kParseError)
           << path << ": cannot read image: not a PNG or JPEG file (fusert decodes those two; "
           << "convert other formats first)";
  }
  Decoded d;
  const bool ok = is_png ? decode_png(data, size, max_pixels, &d) : decode_jpeg(data, size, max_pixels, &d);
  if (d.too_large) {
    return error(StatusCode::kInvalidArgument)
           << path << ": image of " << d.w << "x" << d.h << " pixels "
           << (d.w == 0 || d.h == 0 ? "is empty" : "exceeds the " + std::to_string(max_pixels) + "-pixel limit");
  }
  if (!ok)
    return error(StatusCode::kParseError)
           << path << ": cannot read image: " << (is_png ? "PNG: " : "JPEG: ") << d.error;
  Tensor t(DType::kF32, {static_cast<int64_t>(d.h), static_cast<int64_t>(d.w), 3});
  float* out = t.f32();
  for (size_t i = 0; i < d.rgb.size(); ++i) out[i] = static_cast<float>(d.rgb[i]);
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
  if (h <= 0 || w <= 0)
    return error(StatusCode::kInvalidArgument) << "image of " << w << "x" << h << " pixels has nothing to preprocess";
  if (spec.resize > 0) {
    int64_t oh = h <= w ? spec.resize : h * spec.resize / w;
    int64_t ow = h <= w ? w * spec.resize / h : spec.resize;
    if (spec.resize > 16384 || oh > 65536 || ow > 65536) {
      return error(StatusCode::kInvalidArgument)
             << "resizing a " << w << "x" << h << " image to short side " << spec.resize << " gives " << ow << "x" << oh
             << ", larger than 65536 pixels a side";
    }
    img = resize_bilinear(img, oh, ow);
    h = oh;
    w = ow;
  }
  int64_t ch = spec.crop > 0 ? spec.crop : h, cw = spec.crop > 0 ? spec.crop : w;
  if (ch > h || cw > w) {
    return error(StatusCode::kInvalidArgument)
           << "image of " << h << "x" << w << " is smaller than the crop " << ch << "x" << cw;
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
