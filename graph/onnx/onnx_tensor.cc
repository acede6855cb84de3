// ONNX TensorProto decoding: every storage an exporter uses (raw_data little-endian bytes, the
// typed repeated fields, external data files), sizes checked before anything is allocated.
#include "graph/onnx/onnx_tensor.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "graph/base/half.h"

namespace fusert::onnx_import {

using onnx::TensorProto;

const char* elem_type_name(int t) {
  switch (t) {
    case TensorProto::FLOAT:
      return "float";
    case TensorProto::UINT8:
      return "uint8";
    case TensorProto::INT8:
      return "int8";
    case TensorProto::UINT16:
      return "uint16";
    case TensorProto::INT16:
      return "int16";
    case TensorProto::INT32:
      return "int32";
    case TensorProto::INT64:
      return "int64";
    case TensorProto::STRING:
      return "string";
    case TensorProto::BOOL:
      return "bool";
    case TensorProto::FLOAT16:
      return "float16";
    case TensorProto::DOUBLE:
      return "double";
    case TensorProto::UINT32:
      return "uint32";
    case TensorProto::UINT64:
      return "uint64";
    case TensorProto::BFLOAT16:
      return "bfloat16";
    default:
      return "another type";
  }
}

bool dtype_of(int t, DType* out) {
  switch (t) {
    case TensorProto::FLOAT:
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::DOUBLE:
      *out = DType::kF32;
      return true;  // computed in f32
    case TensorProto::INT64:
      *out = DType::kI64;
      return true;
    case TensorProto::INT32:
      *out = DType::kI32;
      return true;
    case TensorProto::BOOL:
      *out = DType::kBool;
      return true;
    case TensorProto::INT8:
      *out = DType::kI8;
      return true;
    case TensorProto::UINT8:
      *out = DType::kU8;
      return true;
    default:
      return false;
  }
}

namespace {

size_t stored_size(int t) {
  switch (t) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
      return 4;
    case TensorProto::INT64:
    case TensorProto::DOUBLE:
      return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      return 2;
    case TensorProto::BOOL:
    case TensorProto::INT8:
    case TensorProto::UINT8:
      return 1;
    default:
      return 0;
  }
}

// Reads `length` bytes at `offset` of an external-data file (ONNX external data: location,
// offset, length), relative to the model's directory and never outside it.
Result<std::string> read_external(const TensorProto& t, const std::string& base_dir, const std::string& what,
                                  size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = std::atoll(kv.value().c_str());
    if (kv.key() == "length") length = std::atoll(kv.value().c_str());
  }
  if (location.empty()) return error(StatusCode::kParseError) << what << ": external data without a location";
  namespace fs = std::filesystem;
  const fs::path p = (fs::path(base_dir) / location).lexically_normal();
  const std::string rel = fs::path(location).lexically_normal().string();
  if (fs::path(location).is_absolute() || rel.rfind("..", 0) == 0) {
    return error(StatusCode::kParseError)
           << what << ": external data location '" << location << "' is outside the model's directory";
  }
  std::ifstream f(p, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << what << ": external data file " << p.string() << " not found";
  f.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(f.tellg());
  if (length < 0) length = static_cast<int64_t>(expected);
  if (offset < 0 || length != static_cast<int64_t>(expected) || offset > size || size - offset < length) {
    return error(StatusCode::kParseError)
           << what << ": external data " << p.string() << " (offset " << offset << ", length " << length << ", file "
           << size << " bytes) does not hold the " << expected << " bytes of the tensor";
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  f.seekg(offset);
  f.read(bytes.data(), length);
  if (!f) return error(StatusCode::kIoError) << what << ": reading " << p.string() << " failed";
  return bytes;
}

// One element of the stored type from raw little-endian bytes, as f32 / i64.
float load_float(int t, const char* p) {
  uint16_t h;
  switch (t) {
    case TensorProto::FLOAT: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case TensorProto::DOUBLE: {
      double d;
      std::memcpy(&d, p, 8);
      return static_cast<float>(d);
    }
    case TensorProto::FLOAT16:
      std::memcpy(&h, p, 2);
      return half_to_float(h);
    default:
      std::memcpy(&h, p, 2);
      return bf16_to_float(h);
  }
}

}  // namespace

Result<Tensor> decode_tensor(const TensorProto& t, const std::string& base_dir, const std::string& what) {
  const int type = t.data_type();
  DType dt;
  if (!dtype_of(type, &dt)) {
    return error(StatusCode::kUnsupported)
           << what << ": element type " << elem_type_name(type)
           << " (fusert reads float, float16, bfloat16, double, int64, int32, int8, uint8, bool)";
  }
  Shape shape(t.dims().begin(), t.dims().end());
  int64_t n = 0;
  if (!checked_numel(shape, &n)) {
    return error(StatusCode::kParseError) << what << ": shape " << shape_str(shape) << " is negative or too large";
  }
  const size_t es = stored_size(type), bytes = static_cast<size_t>(n) * es;
  std::string external;
  const std::string* raw = t.has_raw_data() ? &t.raw_data() : nullptr;
  if (t.data_location() == TensorProto::EXTERNAL) {
    FUSERT_ASSIGN_OR_RETURN(external, read_external(t, base_dir, what, bytes));
    raw = &external;
  }
  Tensor out(dt, shape);
  if (raw) {
    if (raw->size() != bytes) {
      return error(StatusCode::kParseError) << what << ": " << raw->size() << " bytes of data for " << shape_str(shape)
                                            << " " << elem_type_name(type) << " (" << bytes << " expected)";
    }
    const char* p = raw->data();
    for (int64_t i = 0; i < n; ++i, p += es) {
      if (dt == DType::kF32) {
        out.f32()[i] = load_float(type, p);
      } else {
        std::memcpy(static_cast<char*>(out.raw()) + static_cast<size_t>(i) * dtype_size(dt), p, es);
      }
    }
    return out;
  }
  // The typed fields: float_data (float), double_data, int64_data, int32_data (int32, bool,
  // int8, uint8, float16 and bfloat16 as their bit patterns).
  auto count_error = [&](int64_t got) -> Status {
    return error(StatusCode::kParseError)
           << what << ": " << got << " values for " << shape_str(shape) << " (" << n << " expected)";
  };
  switch (type) {
    case TensorProto::FLOAT:
      if (t.float_data_size() != n) return count_error(t.float_data_size());
      std::copy(t.float_data().begin(), t.float_data().end(), out.f32());
      break;
    case TensorProto::DOUBLE:
      if (t.double_data_size() != n) return count_error(t.double_data_size());
      for (int64_t i = 0; i < n; ++i) out.f32()[i] = static_cast<float>(t.double_data(static_cast<int>(i)));
      break;
    case TensorProto::INT64:
      if (t.int64_data_size() != n) return count_error(t.int64_data_size());
      std::copy(t.int64_data().begin(), t.int64_data().end(), out.i64());
      break;
    default:  // int32, int8, uint8, bool, float16, bfloat16 in int32_data
      if (t.int32_data_size() != n) return count_error(t.int32_data_size());
      for (int64_t i = 0; i < n; ++i) {
        const int32_t v = t.int32_data(static_cast<int>(i));
        if (type == TensorProto::INT32) static_cast<int32_t*>(out.raw())[i] = v;
        if (type == TensorProto::BOOL) static_cast<uint8_t*>(out.raw())[i] = v != 0;
        if (type == TensorProto::INT8) static_cast<int8_t*>(out.raw())[i] = static_cast<int8_t>(v);
        if (type == TensorProto::UINT8) static_cast<uint8_t*>(out.raw())[i] = static_cast<uint8_t>(v);
        if (type == TensorProto::FLOAT16) out.f32()[i] = half_to_float(static_cast<uint16_t>(v));
        if (type == TensorProto::BFLOAT16) out.f32()[i] = bf16_to_float(static_cast<uint16_t>(v));
      }
  }
  return out;
}

}  // namespace fusert::onnx_import
