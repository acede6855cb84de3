// Volumetric (3-D) convolution, transposed convolution and pooling over NCDHW tensors: ONNX's
// Conv, ConvTranspose, MaxPool and AveragePool of a 5-D input (video and medical-imaging models).
// A VolumeAnchor runs them as plain oneDNN primitives (convolution, deconvolution, pooling),
// created once at load with the constant weights reordered into the layout the primitive
// prefers; activations stay NCDHW at the boundary and are reordered inside the call when the
// primitive prefers a blocked layout. The reference loops below run where oneDNN is absent or has
// only its reference implementation, and for a max pool whose input holds NaN (oneDNN drops it).
// Kernels see buffers and parameter structs only, never the graph.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace fusert::cpu {

/// One 3-D window op. Spatial arrays are in D, H, W order; pads as ONNX gives them (begin, end).
struct VolumeParams {
  int64_t n = 1, c = 1, m = 1;  ///< batch, input channels, output channels (pooling: m = c)
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
  int64_t group = 1;
  bool count_include_pad = false;  ///< AveragePool: padding counts in the divisor
};

/// y [N, M, OD, OH, OW] = conv(x [N, C, D, H, W], w [M, C/group, KD, KH, KW]) + b [M] (b nullable).
void conv3d_reference(const VolumeParams& p, const float* x, const float* w, const float* b, float* y);
/// y [N, M, OD, OH, OW] = x [N, C, D, H, W] scattered through w [C, M/group, KD, KH, KW], + b [M]:
/// out = in * stride - pad_begin + k * dil per tap (ONNX ConvTranspose).
void conv_transpose3d_reference(const VolumeParams& p, const float* x, const float* w, const float* b, float* y);
/// y [N, C, OD, OH, OW] = the max over each window's taps inside x (NaN wins).
void max_pool3d_reference(const VolumeParams& p, const float* x, float* y);
/// y = the mean over each window: the taps inside x, divided by their number, or with
/// count_include_pad by the taps inside the padded input (a ceil_mode window past it not counted).
void avg_pool3d_reference(const VolumeParams& p, const float* x, float* y);

enum class VolumeKind { kConv, kConvTranspose, kMaxPool, kAveragePool };

/// A volumetric op as a oneDNN primitive. Thread-safe: run() may be called concurrently.
class VolumeAnchor {
 public:
  virtual ~VolumeAnchor() = default;
  /// The primitive for `p` (`w`, `b`: the constant weights and bias of a convolution, read here
  /// only; null for pooling), or nullptr with `why` (no oneDNN in this build, only its reference
  /// implementation, a case it computes otherwise than ONNX).
  static std::unique_ptr<VolumeAnchor> create(VolumeKind kind, const VolumeParams& p, const float* w, const float* b,
                                              std::string* why);
  /// x NCDHW -> y NCDHW.
  virtual void run(const float* x, float* y) const = 0;
  /// What was created, e.g. "jit:avx512_core; reorders: in, out".
  virtual std::string describe() const = 0;
};

}  // namespace fusert::cpu
