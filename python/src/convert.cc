// numpy <-> fusert::Tensor (python/src/convert.h).
#include "convert.h"

#include <cstring>

namespace fusert::python {

nb::object& error_type() {
  static nb::object* t = new nb::object();  // set once by the module; never destroyed (interpreter exit)
  return *t;
}

void raise(const Status& s) {
  nb::gil_scoped_acquire gil;
  nb::object e = error_type()(s.message());
  e.attr("code") = nb::str(status_code_name(s.code()));
  PyErr_SetObject(error_type().ptr(), e.ptr());
  throw nb::python_error();
}

void raise(StatusCode code, const Msg& m) { raise(Status(code, m.os.str())); }

const char* numpy_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "float32";
    case DType::kF16:
      return "float16";
    case DType::kBF16:
      return "bfloat16";
    case DType::kI64:
      return "int64";
    case DType::kI32:
      return "int32";
    case DType::kBool:
      return "bool";
    case DType::kI8:
      return "int8";
    case DType::kU8:
      return "uint8";
  }
  return "?";
}

namespace {

bool dlpack_dtype(DType t, nb::dlpack::dtype* out) {
  switch (t) {
    case DType::kF32:
      *out = nb::dtype<float>();
      return true;
    case DType::kI64:
      *out = nb::dtype<int64_t>();
      return true;
    case DType::kI32:
      *out = nb::dtype<int32_t>();
      return true;
    case DType::kBool:
      *out = nb::dtype<bool>();
      return true;
    case DType::kI8:
      *out = nb::dtype<int8_t>();
      return true;
    case DType::kU8:
      *out = nb::dtype<uint8_t>();
      return true;
    default:
      return false;
  }
}

}  // namespace

Tensor to_tensor(const InputArray& a, const std::string& name, DType want) {
  nb::dlpack::dtype d{};
  if (!dlpack_dtype(want, &d))
    raise(StatusCode::kUnsupported, Msg() << "input '" << name << "' is " << dtype_name(want) << ", which Python "
                                          << "cannot feed");
  if (a.dtype() != d) {
    raise(StatusCode::kInvalidArgument, Msg() << "input '" << name << "' must be a numpy array of " << numpy_name(want)
                                              << " (got another dtype; "
                                              << "convert it with .astype(numpy." << numpy_name(want) << "))");
  }
  Shape shape;
  for (size_t i = 0; i < a.ndim(); ++i) shape.push_back(static_cast<int64_t>(a.shape(i)));
  void* data = const_cast<void*>(a.data());
  Tensor v = Tensor::view(want, shape, data);
  if (!v.empty()) return v;
  int64_t n = 0;
  if (!checked_numel(shape, &n))
    raise(StatusCode::kInvalidArgument, Msg() << "input '" << name << "' has shape " << shape_str(shape)
                                              << ", larger than fusert takes (" << kMaxTensorElements << " elements)");
  Tensor t(want, shape);  // not 64-byte aligned: a copy
  if (n > 0) std::memcpy(t.raw(), data, t.nbytes());
  return t;
}

nb::object to_numpy(const Tensor& t) {
  nb::dlpack::dtype d{};
  if (!dlpack_dtype(t.dtype(), &d))
    raise(StatusCode::kUnsupported, Msg() << "an output of dtype " << dtype_name(t.dtype()) << " has no numpy form");
  std::vector<size_t> shape;
  for (int64_t s : t.shape()) shape.push_back(static_cast<size_t>(s));
  auto* keep = new Tensor(t);  // the array's share of the buffer
  nb::capsule owner(keep, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::numpy> arr(keep->raw(), shape.size(), shape.data(), owner, nullptr, d);
  return arr.cast();
}

}  // namespace fusert::python
