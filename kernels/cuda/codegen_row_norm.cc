// CUDA generator of row-wise LayerNorm / Softmax with fused prologue and epilogue programs.
// See codegen.h.
#include "kernels/cuda/codegen.h"

#include <sstream>

#include "kernels/cuda/codegen_internal.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/kernel_spec.h"

namespace fusert::cuda {

using namespace detail;

namespace {

// ---------------------------------------------------------------- row-wise prologue/epilogue
std::string row_read(int k) {
  return "a.in[" + std::to_string(k) + "][row * a.in_strides[" + std::to_string(k) + "][0] + col * a.in_strides[" +
         std::to_string(k) + "][1]]";
}

// Two-pass statistics over the row held in shared memory, accumulated in double as the CPU
// kernel does (kernels/cpu/fused_norm.cc): the mean first, then the mean of squared deviations
// from it, so a row with a large common offset keeps its precision; then the float formula.
void emit_layer_norm(std::ostringstream& os, const RowNormSpec& spec) {
  const std::string loop = "  for (fz_i64 col = threadIdx.x; col < inner; col += " + std::to_string(kRowBlock) + ")";
  os << "  __shared__ double fz_red_d[32];\n"
     << "  double s = 0.0;\n"
     << loop << " s += (double)fz_row[col];\n"
     << "  const double mean_d = fz_block_sum_d<" << kRowBlock << ">(s, fz_red_d) / (double)inner;\n"
     << "  double q = 0.0;\n"
     << loop << " {\n    const double d = (double)fz_row[col] - mean_d;\n    q += d * d;\n  }\n"
     << "  const double var = fz_block_sum_d<" << kRowBlock << ">(q, fz_red_d) / (double)inner;\n"
     << "  const float mean = (float)mean_d;\n"
     << "  const float inv = (float)(1.0 / sqrt(var + (double)" << hex_float(spec.eps) << "));\n"
     << loop << " {\n    float y = (fz_row[col] - mean) * inv;\n";
  if (spec.scale_input >= 0) os << "    y = y * a.in[" << spec.scale_input << "][col];\n";
  if (spec.shift_input >= 0) os << "    y = y + a.in[" << spec.shift_input << "][col];\n";
  os << "    a.out[row * inner + col] = fz_post(a, row, col, y);\n  }\n";
}

// Max-subtracted softmax; the branch on the block-wide max is uniform (all threads hold the
// same reduced bits). A row of all -inf gives zeros (then the post program), never NaN.
void emit_softmax(std::ostringstream& os) {
  const std::string loop = "  for (fz_i64 col = threadIdx.x; col < inner; col += " + std::to_string(kRowBlock) + ")";
  os << "  float m = FZ_NEG_INF;\n"
     << loop << " m = fz_nan_max(m, fz_row[col]);\n"
     << "  m = fz_block_max<" << kRowBlock << ">(m, fz_red);\n"
     << "  if (m == FZ_NEG_INF) {\n"
     << "  " << loop << " a.out[row * inner + col] = fz_post(a, row, col, 0.0f);\n"
     << "    return;\n  }\n"
     << "  float s = 0.0f;\n"
     << loop << " {\n    const float e = expf(fz_row[col] - m);\n    fz_row[col] = e;\n    s += e;\n  }\n"
     << "  const float inv = 1.0f / fz_block_sum<" << kRowBlock << ">(s, fz_red);\n"
     << loop << " a.out[row * inner + col] = fz_post(a, row, col, fz_row[col] * inv);\n";
}

}  // namespace

// Each thread owns columns tid, tid + BLOCK, ...: it writes and later re-reads only its own
// shared-memory slots, so the only barriers needed are inside the block reductions.
KernelSource gen_row_norm(const RowNormSpec& spec) {
  const bool ln = spec.kind == kern::RowNorm::kLayerNorm;
  std::ostringstream os;
  os << math_helpers() << kReduceHelpers;
  const std::string params = "const fz_i64 row, const fz_i64 col";
  emit_value_fn(os, "fz_pre", "FzRowArgs", params, spec.pre, row_read, false);
  emit_value_fn(os, "fz_post", "FzRowArgs", params, spec.post, row_read, true);
  if (spec.scale_input >= kMaxInputs || spec.shift_input >= kMaxInputs) {
    os << "#error \"fusert codegen: scale/shift input out of range\"\n";
  }
  os << "extern \"C\" __global__ void __launch_bounds__(" << kRowBlock << ") " << kEntryToken
     << "(const FzRowArgs a) {\n"
     << "  extern __shared__ float fz_row[];\n  __shared__ float fz_red[32];\n"
     << "  const fz_i64 row = blockIdx.x, inner = a.inner;\n"
     << "  for (fz_i64 col = threadIdx.x; col < inner; col += " << kRowBlock
     << ") fz_row[col] = fz_pre(a, row, col);\n";
  if (ln)
    emit_layer_norm(os, spec);
  else
    emit_softmax(os);
  os << "}\n";
  KernelSource ks = finish(ln ? "layernorm" : "softmax", os.str(), kRowBlock);
  register_kernel_spec(ks.entry, spec);
  return ks;
}

size_t row_norm_shared_bytes(int64_t inner) { return static_cast<size_t>(inner > 0 ? inner : 0) * sizeof(float); }

}  // namespace fusert::cuda
