// NumPy .npy reading and writing.
#include "runtime/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>

#include "graph/base/file.h"

namespace fusert {

// ---------------------------------------------------------------- .npy
static Status npy_error(const std::string& path, const std::string& what) {
  return error(StatusCode::kParseError) << path << ": not a valid .npy file: " << what;
}

// Extracts the value text of 'key' in the header dict, e.g. 'descr': '<f4'.
static std::string npy_header_field(const std::string& h, const std::string& key) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos) return "";
  size_t colon = h.find(':', k);
  if (colon == std::string::npos) return "";
  size_t start = h.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) return "";
  char open = h[start];
  if (open == '\'') return h.substr(start + 1, h.find('\'', start + 1) - start - 1);
  if (open == '(') return h.substr(start + 1, h.find(')', start) - start - 1);
  size_t end = h.find_first_of(",}", start);
  return h.substr(start, end - start);
}

Result<Tensor> read_npy(const std::string& path) {
  FUSERT_RETURN_IF_ERROR(check_regular_file(path, "file"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open file";
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() < 10 || data.compare(0, 6, "\x93NUMPY") != 0) return npy_error(path, "bad magic");
  int major = static_cast<uint8_t>(data[6]);
  if (major < 1 || major > 3) return npy_error(path, "format version " + std::to_string(major) + " (1, 2 or 3 read)");
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = static_cast<uint8_t>(data[8]) | (static_cast<uint8_t>(data[9]) << 8);
    hstart = 10;
  } else {
    if (data.size() < 12) return npy_error(path, "truncated header");
    hlen = 0;
    for (int i = 0; i < 4; ++i) hlen |= static_cast<size_t>(static_cast<uint8_t>(data[8 + i])) << (8 * i);
    hstart = 12;
  }
  if (hstart + hlen > data.size()) return npy_error(path, "truncated header");
  std::string h = data.substr(hstart, hlen);
  std::string descr = npy_header_field(h, "descr");
  if (npy_header_field(h, "fortran_order") == "True") return npy_error(path, "fortran_order arrays are not supported");
  Shape shape;
  std::stringstream ss(npy_header_field(h, "shape"));
  std::string tok;
  if (h.find("'shape'") == std::string::npos || h.find(')', h.find("'shape'")) == std::string::npos)
    return npy_error(path, "no 'shape': (...) in the header");
  while (std::getline(ss, tok, ',')) {
    if (tok.find_first_not_of(' ') == std::string::npos) continue;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(tok.c_str(), &end, 10);
    // a whole decimal integer (a trailing 'L' from Python 2's numpy allowed), nothing else
    const bool whole =
        end != tok.c_str() && tok.find_first_not_of(" L", static_cast<size_t>(end - tok.c_str())) == std::string::npos;
    if (!whole || errno == ERANGE) return npy_error(path, "shape entry '" + tok + "' is not an integer");
    if (v < 0) return npy_error(path, "negative dimension");
    shape.push_back(v);
  }
  size_t esize = 0;
  DType dt = DType::kF32;
  if (descr == "<f4") {
    esize = 4;
    dt = DType::kF32;
  } else if (descr == "<f8") {
    esize = 8;
    dt = DType::kF32;
  } else if (descr == "<i8") {
    esize = 8;
    dt = DType::kI64;
  } else if (descr == "<i4") {
    esize = 4;
    dt = DType::kI32;
  } else if (descr == "|b1") {
    esize = 1;
    dt = DType::kBool;
  } else if (descr == "|i1") {
    esize = 1;
    dt = DType::kI8;
  } else if (descr == "|u1") {
    esize = 1;
    dt = DType::kU8;
  } else
    return npy_error(path, "unsupported dtype '" + descr + "' (want <f4, <f8, <i8, <i4, |b1, |i1, |u1)");
  int64_t count = 0;
  if (!checked_numel(shape, &count)) {
    return npy_error(path,
                     "shape " + shape_str(shape) + " exceeds " + std::to_string(kMaxTensorElements) + " elements");
  }
  size_t n = static_cast<size_t>(count);
  size_t off = hstart + hlen;
  if (data.size() - off < n * esize) {
    return npy_error(path, "truncated data: expected " + std::to_string(n * esize) + " bytes, got " +
                               std::to_string(data.size() - off));
  }
  Tensor t(dt, shape);
  if (descr == "<f8") {
    for (size_t i = 0; i < n; ++i) {
      double d;
      std::memcpy(&d, data.data() + off + i * 8, 8);
      t.f32()[i] = static_cast<float>(d);
    }
  } else {
    std::memcpy(t.raw(), data.data() + off, n * esize);
  }
  return t;
}

Status write_npy(const std::string& path, const Tensor& t) {
  const char* descr = t.dtype() == DType::kF32    ? "<f4"
                      : t.dtype() == DType::kI64  ? "<i8"
                      : t.dtype() == DType::kI32  ? "<i4"
                      : t.dtype() == DType::kBool ? "|b1"
                      : t.dtype() == DType::kI8   ? "|i1"
                      : t.dtype() == DType::kU8   ? "|u1"
                                                  : nullptr;
  if (!descr) return error(StatusCode::kUnsupported) << "write_npy: dtype " << dtype_name(t.dtype());
  std::ostringstream h;
  h << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.shape().size(); ++i)
    h << t.shape()[i] << (t.shape().size() == 1 || i + 1 < t.shape().size() ? ", " : "");
  h << "), }";
  std::string header = h.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  std::ofstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot open for writing";
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t hl = static_cast<uint16_t>(header.size());
  char hb[2] = {static_cast<char>(hl & 0xff), static_cast<char>(hl >> 8)};
  f.write(hb, 2);
  f.write(header.data(), header.size());
  f.write(static_cast<const char*>(t.raw()), t.nbytes());
  f.close();  // a full disk surfaces at flush: check after closing
  if (!f) return error(StatusCode::kIoError) << path << ": write failed (disk full or not writable?)";
  return Status();
}

}  // namespace fusert
