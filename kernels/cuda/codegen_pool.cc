// CUDA generator of 2-D pooling (max, average, global average) with fused prologue and post
// programs. See codegen.h.
#include "kernels/cuda/codegen.h"

#include <sstream>

#include "kernels/cuda/codegen_internal.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"

namespace fusert::cuda {

using namespace detail;

namespace {

// ---------------------------------------------------------------- pooling
std::string pool_read(int k, const char* y, const char* x) {
  const std::string s = "a.in_strides[" + std::to_string(k) + "]";
  return "a.in[" + std::to_string(k) + "][ni * " + s + "[0] + ci * " + s + "[1] + " + y + " * " + s + "[2] + " + x +
         " * " + s + "[3]]";
}

// Window taps at y0 + ky * dil (ky < kh); only taps inside the input are read. The average's
// count_include_pad divisor counts taps inside the padded extent [-pad_top, h + pad_bottom),
// the window ONNX clips to under ceil_mode (cpu::avg_pool2d's rule).
void emit_window_pool(std::ostringstream& os, const PoolSpec& s) {
  const bool max = s.kind == PoolSpec::kMax;
  os << "  const fz_i64 total = a.n * a.c * a.oh * a.ow;\n"
     << "  for (fz_i64 o = (fz_i64)blockIdx.x * " << kPoolBlock
     << " + threadIdx.x; o < total; o += (fz_i64)gridDim.x * " << kPoolBlock << ") {\n"
     << "    const fz_i64 ox = o % a.ow, t = o / a.ow, oy = t % a.oh, t2 = t / a.oh, ci = t2 % a.c, ni = t2 / a.c;\n"
     << "    const fz_i64 y0 = oy * " << s.stride_h << " - " << s.pad_top << ", x0 = ox * " << s.stride_w << " - "
     << s.pad_left << ";\n"
     << "    float acc = " << (max ? hex_float(-3.40282347e+38f) : "0.0f") << ";\n"
     << (max ? "" : "    int count = 0;\n") << "    for (int ky = 0; ky < " << s.kh << "; ++ky) {\n"
     << "      const fz_i64 iy = y0 + ky * " << s.dil_h << ";\n"
     << "      if (iy < 0 || iy >= a.h) continue;\n"
     << "      for (int kx = 0; kx < " << s.kw << "; ++kx) {\n"
     << "        const fz_i64 ix = x0 + kx * " << s.dil_w << ";\n"
     << "        if (ix < 0 || ix >= a.w) continue;\n"
     << "        const float v = fz_pre(a, ni, ci, iy, ix);\n"
     << (max ? "        acc = fz_nan_max(acc, v);\n" : "        acc += v;\n") << (max ? "" : "        ++count;\n")
     << "      }\n    }\n";
  if (!max && s.count_include_pad) {
    os << "    int py = 0, px = 0;\n"
       << "    for (int ky = 0; ky < " << s.kh << "; ++ky) {\n"
       << "      const fz_i64 iy = y0 + ky * " << s.dil_h << ";\n"
       << "      py += iy >= " << -s.pad_top << " && iy < a.h + " << s.pad_bottom << ";\n    }\n"
       << "    for (int kx = 0; kx < " << s.kw << "; ++kx) {\n"
       << "      const fz_i64 ix = x0 + kx * " << s.dil_w << ";\n"
       << "      px += ix >= " << -s.pad_left << " && ix < a.w + " << s.pad_right << ";\n    }\n"
       << "    count = py * px;\n";
  }
  if (!max) os << "    acc = count > 0 ? acc / (float)count : 0.0f;\n";
  os << "    a.out[o] = fz_post(a, ni, ci, oy, ox, acc);\n  }\n";
}

// One warp per (n, c) plane; lanes stride the plane, then a butterfly sum.
void emit_global_pool(std::ostringstream& os) {
  const int warps = kPoolBlock / 32;
  os << "  const fz_i64 planes = a.n * a.c, hw = a.h * a.w;\n"
     << "  const int lane = threadIdx.x & 31;\n"
     << "  for (fz_i64 p = (fz_i64)blockIdx.x * " << warps
     << " + (threadIdx.x >> 5); p < planes; p += (fz_i64)gridDim.x * " << warps << ") {\n"
     << "    const fz_i64 ni = p / a.c, ci = p % a.c;\n"
     << "    float s = 0.0f;\n"
     << "    for (fz_i64 e = lane; e < hw; e += 32) {\n"
     << "      const fz_i64 iy = e / a.w;\n"
     << "      s += fz_pre(a, ni, ci, iy, e - iy * a.w);\n    }\n"
     << "    s = fz_warp_sum(s);\n"
     << "    if (lane == 0) a.out[p] = fz_post(a, ni, ci, 0, 0, hw > 0 ? s / (float)hw : 0.0f);\n  }\n";
}

}  // namespace

KernelSource gen_pool(const PoolSpec& spec) {
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  emit_value_fn(
      os, "fz_pre", "FzPoolArgs", "const fz_i64 ni, const fz_i64 ci, const fz_i64 y, const fz_i64 x", spec.pre,
      [](int k) { return pool_read(k, "y", "x"); }, false);
  emit_value_fn(
      os, "fz_post", "FzPoolArgs", "const fz_i64 ni, const fz_i64 ci, const fz_i64 y, const fz_i64 x", spec.post,
      [](int k) { return pool_read(k, "y", "x"); }, true);
  os << "extern \"C\" __global__ void __launch_bounds__(" << kPoolBlock << ") " << kEntryToken
     << "(const FzPoolArgs a) {\n";
  if (spec.kind == PoolSpec::kGlobalAverage)
    emit_global_pool(os);
  else
    emit_window_pool(os, spec);
  os << "}\n";
  const char* kind = spec.kind == PoolSpec::kMax ? "maxpool" : spec.kind == PoolSpec::kAverage ? "avgpool" : "gavgpool";
  KernelSource ks = finish(kind, os.str(), kPoolBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

}  // namespace fusert::cuda
