// Internals of the emulated cuDNN shared by its files (fake_cudnn.cc: descriptors and the forward
// convolution; fake_cudnn_bwd.cc: the backward-data convolution and cudnnAddTensor): the opaque
// descriptor types, the live-handle registry, and one convolution's parameters read from its
// descriptors.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <set>
#include <string>

struct cudnnContext {
  cudaStream_t stream = nullptr;
};

struct cudnnTensorStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};

struct cudnnFilterStruct {
  bool set = false;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, h = 0, w = 0;
};

struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, u = 1, v = 1, dil_h = 1, dil_w = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  int groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

struct cudnnActivationStruct {
  bool set = false;
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0;
};

namespace fake_cudnn {

struct Handles {
  std::set<const void*> live;  // every live handle and descriptor
};
Handles& handles();

template <typename T>
cudnnStatus_t create(T** out) {
  if (!out) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  *out = new T();
  handles().live.insert(*out);
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t destroy(T* p) {
  if (!p) return CUDNN_STATUS_SUCCESS;  // destroying a null descriptor is a no-op
  if (!handles().live.erase(p)) return CUDNN_STATUS_BAD_PARAM;
  delete p;
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
bool live(const T* p) {
  return p && handles().live.count(p) != 0;
}

/// Prints why and returns `st`.
cudnnStatus_t fail(cudnnStatus_t st, const std::string& why);

// The plain parameters of one convolution, copied out of the descriptors at the call.
struct Conv {
  int n, c, h, w;   // x
  int k, cg, r, s;  // w: k filters of cg channels, r x s
  int oh, ow;       // y
  int pad_h, pad_w, u, v, dil_h, dil_w, groups;
  bool flip;  // CUDNN_CONVOLUTION: the filter is flipped
  int64_t x_elems() const { return int64_t{n} * c * h * w; }
  int64_t w_elems() const { return int64_t{k} * cg * r * s; }
  int64_t y_elems() const { return int64_t{n} * k * oh * ow; }
};

/// Validates descriptors and fills `cv` (x, w, conv, and y when given): the forward convolution
/// x -> y (for backward data, x is dx and y is dy).
cudnnStatus_t conv_of(const cudnnTensorStruct* x, const cudnnFilterStruct* w, const cudnnConvolutionStruct* cd,
                      const cudnnTensorStruct* y, Conv* cv);
bool overlaps(const void* a, size_t an, const void* b, size_t bn);
bool aligned4(const void* p);

}  // namespace fake_cudnn
