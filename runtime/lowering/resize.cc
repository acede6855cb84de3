// ONNX Resize's sampling tables (runtime/lowering/resize.h).
#include "runtime/lowering/resize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

namespace fusert::lowering {

namespace {

// Source coordinate of output coordinate `o` along one dim (ONNX Resize's
// coordinate_transformation_mode; scale as given, or out/in when sizes were given). The resized
// length is in * scale unrounded, as ONNX's reference implementation has it (it differs from the
// output size when scales do not divide evenly: 4 * 0.6 = 2.4, 2 outputs).
double source_coord(const std::string& mode, int64_t o, int64_t in, double scale) {
  const double x = static_cast<double>(o), resized = static_cast<double>(in) * scale;
  if (mode == "pytorch_half_pixel") return resized > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (mode == "align_corners") return resized == 1.0 ? 0.0 : x * static_cast<double>(in - 1) / (resized - 1.0);
  if (mode == "asymmetric") return x / scale;
  if (mode == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (mode == "half_pixel_symmetric") {  // opset 19: half_pixel, re-centred when in * scale is not whole
    const double adjustment = std::floor(resized) / resized,
                 offset = static_cast<double>(in) / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

int64_t nearest_index(const std::string& mode, double x) {
  const double f = std::floor(x);
  if (mode == "floor") return static_cast<int64_t>(f);
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  if (x - f == 0.5) return static_cast<int64_t>(mode == "round_prefer_ceil" ? f + 1.0 : f);
  return static_cast<int64_t>(std::round(x));
}

// Cubic convolution weights (Keys, coefficient a) of the taps floor(x) - 1 .. floor(x) + 2 at
// fraction r = x - floor(x), as ONNX's reference writes them.
std::array<double, 4> cubic_weights(double r, double a) {
  const auto near = [a](double t) { return ((a + 2) * t - (a + 3)) * t * t + 1; };       // |t| <= 1
  const auto far = [a](double t) { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a; };  // 1 < |t| < 2
  return {far(r + 1), near(r), near(1 - r), far(2 - r)};
}

kern::ResizeAxis resize_axis(const Node& n, int64_t in, int64_t out, double scale) {
  const std::string mode = n.attr_s("mode");
  const bool linear = mode == "linear", cubic = mode == "cubic";
  const std::string ct = n.attr_s("coordinate_transformation_mode"), nm = n.attr_s("nearest_mode");
  kern::ResizeAxis a;
  a.taps = cubic ? 4 : linear ? 2 : 1;
  for (int64_t o = 0; o < out; ++o) {
    double x = source_coord(ct, o, in, scale);
    if (cubic) {  // the input extended by its edge values; exclude_outside drops those taps instead
      const double f = std::floor(x);
      const std::array<double, 4> w = cubic_weights(x - f, n.attr_f("cubic_coeff_a"));
      double kept = 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(f) - 1 + t;
        const bool outside = i < 0 || i >= in;
        kept += outside ? 0.0 : w[static_cast<size_t>(t)];
      }
      const bool exclude = n.attr_i("exclude_outside") != 0;
      for (int t = 0; t < 4; ++t) {
        const int64_t i = static_cast<int64_t>(f) - 1 + t;
        const bool outside = i < 0 || i >= in;
        a.index.push_back(std::min(std::max<int64_t>(i, 0), in - 1));
        const double wt = exclude ? (outside ? 0.0 : w[static_cast<size_t>(t)] / kept) : w[static_cast<size_t>(t)];
        a.weight.push_back(static_cast<float>(wt));
      }
      continue;
    }
    if (!linear) {
      a.index.push_back(std::min(std::max<int64_t>(nearest_index(nm, x), 0), in - 1));
      a.weight.push_back(1.0f);
      continue;
    }
    x = std::min(std::max(x, 0.0), static_cast<double>(in - 1));
    const int64_t i0 = static_cast<int64_t>(std::floor(x)), i1 = std::min(i0 + 1, in - 1);
    const double r = x - static_cast<double>(i0);
    a.index.insert(a.index.end(), {i0, i1});
    a.weight.insert(a.weight.end(), {static_cast<float>(1.0 - r), static_cast<float>(r)});
  }
  return a;
}

}  // namespace

std::vector<kern::ResizeAxis> resize_axes(const Graph& g, const Node& n) {
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  const bool has_scales = n.inputs.size() > 2 && n.inputs[2] != kNoValue && g.value(n.inputs[2]).data.numel() > 0;
  std::vector<kern::ResizeAxis> axes;
  for (size_t d = 0; d < xs.size(); ++d) {
    const double scale = has_scales ? static_cast<double>(g.value(n.inputs[2]).data.f32()[d])
                                    : static_cast<double>(ys[d]) / static_cast<double>(xs[d]);
    axes.push_back(resize_axis(n, xs[d], ys[d], scale));
  }
  return axes;
}

}  // namespace fusert::lowering
