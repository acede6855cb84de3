// Helpers of the quantisation tests (tests/graph/test_onnx_quant.cc, test_qdq_gemm.cc): 8-bit and
// int32 initializers, tensors and their values as ints, the kernels a session ran.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "tests/graph/onnx_test_util.h"

namespace fusert::onnx_test {

// An i8 / u8 / i32 / f32 initializer from raw bytes.
template <typename T>
inline void add_typed(onnx::GraphProto* g, const std::string& name, int elem, std::vector<int64_t> dims,
                      const std::vector<T>& v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(elem);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T)));
}

template <typename T>
inline Tensor typed(DType dt, const Shape& s, const std::vector<T>& v) {
  Tensor x(dt, s);
  std::memcpy(x.raw(), v.data(), v.size() * sizeof(T));
  return x;
}

template <typename T>
inline std::vector<int> ints_of(const Tensor& t) {
  std::vector<int> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<int>(static_cast<const T*>(t.raw())[i]));
  return v;
}

// The kernels of one profiled run, joined by spaces.
inline std::string kernels_of(const Session& s, const TensorMap& in) {
  auto steps = s.profile(in, 1);
  REQUIRE_MESSAGE(steps.ok(), steps.status().to_string());
  std::string k;
  for (const StepTime& t : *steps) k += t.kernel + " ";
  return k;
}

}  // namespace fusert::onnx_test
