// ONNX GridSample by hand (ONNX's conformance cases cover every mode and padding): the centre of a
// 2x2 image is the mean of its pixels; a grid point far outside reads 0 (zeros), the edge
// (border) or its mirror image (reflection); a NaN grid coordinate gives NaN, never a crash.
#include <cmath>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

Tensor sample(const std::vector<float>& grid_xy, const char* mode, const char* padding, int align) {
  auto m = model(16);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  const int64_t points = static_cast<int64_t>(grid_xy.size() / 2);
  add_input(g, "grid", {1, 1, points, 2});
  auto* n = add_node(g, "GridSample", {"x", "grid"}, {"y"}, "gs");
  str_attr(n, "mode", mode);
  str_attr(n, "padding_mode", padding);
  int_attr(n, "align_corners", align);
  add_output(g, "y");
  return run_model(m, "grid_sample.onnx",
                   {{"x", Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4})}, {"grid", Tensor::f32({1, 1, points, 2}, grid_xy)}},
                   "y")
      .clone();
}

}  // namespace

TEST_CASE("onnx import: GridSample by hand") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  check_f32(sample({0, 0}, "bilinear", "zeros", 0), {1, 1, 1, 1}, {2.5f});
  // Corners with align_corners: the corner pixels; (1, -1) is the top right.
  check_f32(sample({-1, -1, 1, -1, 1, 1}, "bilinear", "zeros", 1), {1, 1, 1, 3}, {1, 2, 4});
  // Far outside: 0 with zeros, the nearest corner with border; a NaN coordinate is NaN.
  check_f32(sample({-1e30f, 0, 1e30f, 1e30f, nan, 0}, "bilinear", "zeros", 0), {1, 1, 1, 3}, {0, 0, nan});
  check_f32(sample({-1e30f, -1e30f, 1e30f, 1e30f, nan, 0}, "bicubic", "border", 0), {1, 1, 1, 3}, {1, 4, nan});
  // Reflection about the borders -0.5 and 1.5 (align_corners 0): pixel x 2.0 (n = 1.5) mirrors to
  // 1.0; y (n = -0.5) is row 0.
  check_f32(sample({1.5f, -0.5f}, "nearest", "reflection", 0), {1, 1, 1, 1}, {2});
}
