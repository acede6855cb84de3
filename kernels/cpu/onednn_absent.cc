// oneDNN anchors in a build without oneDNN: every create() says so, and the CPU backend runs
// its reference kernels.
#include "kernels/cpu/onednn.h"
#include "kernels/cpu/volume.h"

namespace fusert::cpu::onednn {

bool built() { return false; }
bool bf16_native() { return false; }

namespace {
const char* kAbsent = "this build has no oneDNN (install libdnnl-dev and reconfigure)";
}

std::unique_ptr<ConvAnchor> ConvAnchor::create(const ConvParams&, const float*, const float*, const Epilogue&,
                                               std::string* why, Precision) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<GemmAnchor> GemmAnchor::create_gemm(const GemmParams&, const float*, const float*, const Epilogue&,
                                                    std::string* why, Precision) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<GemmAnchor> GemmAnchor::create_matmul(const MatMulParams&, const float*, const float*, const Epilogue&,
                                                      std::string* why, Precision) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<AttentionAnchor> AttentionAnchor::create(const AttentionParams&, std::string* why) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<QConvAnchor> QConvAnchor::create(const ConvParams&, DType, int32_t, const int8_t*, const Requant&,
                                                 std::string* why) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<IntMatMulAnchor> IntMatMulAnchor::create(int64_t, int64_t, int64_t, DType, const int8_t*,
                                                         std::string* why) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<PoolAnchor> PoolAnchor::create(const PoolParams&, bool, std::string* why) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<HorizontalAnchor> HorizontalAnchor::create(int64_t, int64_t, const std::vector<int64_t>&, const float*,
                                                           const float*, std::string* why, Precision) {
  *why = kAbsent;
  return nullptr;
}

std::unique_ptr<PointwiseDepthwiseAnchor> PointwiseDepthwiseAnchor::create(const ConvParams&, const float*,
                                                                           const float*, const Epilogue&,
                                                                           const ConvParams&, const float*,
                                                                           const float*, const Epilogue&, bool,
                                                                           std::string* why) {
  *why = kAbsent;
  return nullptr;
}

}  // namespace fusert::cpu::onednn

namespace fusert::cpu {

std::unique_ptr<VolumeAnchor> VolumeAnchor::create(VolumeKind, const VolumeParams&, const float*, const float*,
                                                   std::string* why) {
  *why = "this build has no oneDNN (install libdnnl-dev and reconfigure)";
  return nullptr;
}

}  // namespace fusert::cpu
