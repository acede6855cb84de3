// Image input: decode (libpng, libjpeg-turbo) and the preprocessing of models/FORMAT.md.
#pragma once

#include <string>

#include "graph/base/tensor.h"
#include "graph/loader/model_loader.h"

namespace fusert {

/// Decodes a PNG (libpng) or JPEG (libjpeg-turbo) file to RGB, returned as an f32 [H, W, 3]
/// tensor of values 0..255, the pixels Pillow's `Image.open(f).convert("RGB")` gives: palette
/// and gray expanded, alpha dropped (not composited), 16-bit PNG samples reduced to their high
/// byte, no gamma or ICC correction. Errors (kParseError) name the file and the decoder's
/// reason: other formats, truncated or corrupt files (a JPEG whose data ends early is an error,
/// not an image with invented rows), CMYK JPEGs; kInvalidArgument for an empty image or one
/// over `max_pixels`, checked from the header before any pixel memory is allocated.
/// Largest image decode_image accepts by default (width x height): 8192 x 8192; larger headers
/// are an error before any pixel memory is allocated.
constexpr int64_t kMaxImagePixels = int64_t{8192} * 8192;
Result<Tensor> decode_image(const std::string& path, int64_t max_pixels = kMaxImagePixels);

/// Applies `spec` to an [H, W, 3] RGB image: short-side bilinear resize (half-pixel centres,
/// clamped edges, no antialias: torch.nn.functional.interpolate(mode="bilinear",
/// align_corners=False)), centre crop, (x / divisor - mean) / std, NCHW [1, 3, crop, crop].
/// Errors when the crop is larger than the resized image.
Result<Tensor> preprocess_image(const Tensor& hwc, const PreprocessSpec& spec);

/// Bilinear resize of an [H, W, C] f32 image to [oh, ow, C] (same formula as above).
Tensor resize_bilinear(const Tensor& hwc, int64_t oh, int64_t ow);

}  // namespace fusert
