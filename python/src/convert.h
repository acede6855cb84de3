// numpy <-> fusert::Tensor for the Python module (python/src/module.cc): inputs viewed without a
// copy where they are C-contiguous and 64-byte aligned, outputs handed to numpy without a copy
// (the array owns a share of the tensor's buffer).
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <sstream>
#include <string>

#include "fusert/fusert.h"

namespace fusert::python {

namespace nb = nanobind;

/// An input array as the session takes it: C-contiguous, on the CPU.
using InputArray = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;

/// The Python exception type errors are raised as (fusert.Error), set by the module.
nb::object& error_type();

/// Raises `s` as fusert.Error: its message, and its code ("invalid argument", ...) as `code`.
[[noreturn]] void raise(const Status& s);

/// A message built with <<, for raise(code, Msg() << "input '" << name << "' ...").
struct Msg {
  std::ostringstream os;
  template <typename T>
  Msg& operator<<(const T& v) {
    os << v;
    return *this;
  }
};
/// Raises fusert.Error of `code` with message `m`.
[[noreturn]] void raise(StatusCode code, const Msg& m);

/// The numpy name of `t` ("float32", "int64", "int32", "bool"; f16/bf16 as "float16"/"bfloat16").
const char* numpy_name(DType t);

/// Array `a`, given for input `name` of dtype `want`, as a tensor: a view when its data is
/// 64-byte aligned, else a copy. Raises fusert.Error (invalid argument) naming the input for a
/// dtype other than `want`.
Tensor to_tensor(const InputArray& a, const std::string& name, DType want);

/// Tensor `t` as a numpy array sharing its buffer.
nb::object to_numpy(const Tensor& t);

}  // namespace fusert::python
