// safetensors reading/writing, seeded initialisation, binding weights to a graph.
#include "runtime/weights.h"
#include "graph/base/file.h"
#include "graph/base/half.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace fusert {

namespace {

// A read-only memory map, unmapped on destruction.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ && data_ != MAP_FAILED) munmap(data_, size_);
    if (fd_ >= 0) close(fd_);
  }
  Status open(const std::string& path) {
    if (Status st = check_regular_file(path, "weights file"); !st.ok() && st.code() != StatusCode::kNotFound) return st;
    fd_ = ::open(path.c_str(), O_RDONLY);
    if (fd_ < 0) return error(StatusCode::kNotFound) << path << ": cannot open weights file: " << std::strerror(errno);
    struct stat st {};
    if (fstat(fd_, &st) != 0) return error(StatusCode::kIoError) << path << ": stat failed";
    size_ = static_cast<size_t>(st.st_size);
    if (size_ == 0) return error(StatusCode::kParseError) << path << ": empty file, not a safetensors file";
    data_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
    if (data_ == MAP_FAILED) return error(StatusCode::kIoError) << path << ": mmap failed";
    return Status();
  }
  const uint8_t* bytes() const { return static_cast<const uint8_t*>(data_); }
  size_t size() const { return size_; }

 private:
  int fd_ = -1;
  void* data_ = nullptr;
  size_t size_ = 0;
};

Status parse_entry(const std::string& path, const std::string& name, const nlohmann::json& e, const uint8_t* data,
                   size_t data_size, Tensor* out) {
  auto bad = [&](const std::string& what) -> Status {
    return error(StatusCode::kParseError) << path << ": tensor '" << name << "': " << what;
  };
  if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets")) {
    return bad("header entry needs dtype, shape and data_offsets");
  }
  std::string dtype = e["dtype"].get<std::string>();
  Shape shape = e["shape"].get<Shape>();
  auto offs = e["data_offsets"].get<std::vector<uint64_t>>();
  if (offs.size() != 2 || offs[0] > offs[1] || offs[1] > data_size) {
    return bad("data_offsets outside the data section (file truncated?)");
  }
  for (int64_t d : shape)
    if (d < 0) return bad("negative dimension");
  size_t esize = dtype == "F32" ? 4 : (dtype == "F16" || dtype == "BF16") ? 2 : (dtype == "I64" ? 8 : 0);
  if (esize == 0) return bad("unsupported dtype " + dtype + " (F32, F16, BF16, I64)");
  int64_t count = 0;
  if (!checked_numel(shape, &count))
    return bad("shape " + shape_str(shape) + " exceeds " + std::to_string(kMaxTensorElements) + " elements");
  size_t n = static_cast<size_t>(count);
  if (offs[1] - offs[0] != n * esize) {
    return bad("shape " + shape_str(shape) + " needs " + std::to_string(n * esize) + " bytes, data_offsets give " +
               std::to_string(offs[1] - offs[0]));
  }
  const uint8_t* src = data + offs[0];
  if (dtype == "I64") {
    *out = Tensor(DType::kI64, shape);
    std::memcpy(out->raw(), src, n * 8);
    return Status();
  }
  *out = Tensor(DType::kF32, shape);
  float* dst = out->f32();
  if (dtype == "F32") {
    std::memcpy(dst, src, n * 4);
  } else {
    for (size_t i = 0; i < n; ++i) {
      uint16_t h;
      std::memcpy(&h, src + 2 * i, 2);
      dst[i] = dtype == "F16" ? half_to_float(h) : bf16_to_float(h);
    }
  }
  return Status();
}

}  // namespace

Result<std::map<std::string, Tensor>> read_safetensors(const std::string& path) {
  MappedFile f;
  FUSERT_RETURN_IF_ERROR(f.open(path));
  if (f.size() < 8)
    return error(StatusCode::kParseError)
           << path << ": truncated safetensors file (" << f.size() << " bytes, no header)";
  uint64_t hlen = 0;
  std::memcpy(&hlen, f.bytes(), 8);
  if (hlen > f.size() - 8) {
    return error(StatusCode::kParseError) << path << ": corrupt or truncated safetensors file: header size " << hlen
                                          << " exceeds the file (" << f.size() << " bytes)";
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(f.bytes() + 8, f.bytes() + 8 + hlen);
  } catch (const nlohmann::json::exception& e) {
    return error(StatusCode::kParseError) << path << ": corrupt safetensors header (JSON): " << e.what();
  }
  if (!header.is_object()) return error(StatusCode::kParseError) << path << ": safetensors header is not a JSON object";
  const uint8_t* data = f.bytes() + 8 + hlen;
  size_t data_size = f.size() - 8 - hlen;
  std::map<std::string, Tensor> out;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    Tensor t;
    try {
      FUSERT_RETURN_IF_ERROR(parse_entry(path, it.key(), it.value(), data, data_size, &t));
    } catch (const nlohmann::json::exception& e) {
      return error(StatusCode::kParseError) << path << ": tensor '" << it.key() << "': bad header entry: " << e.what();
    }
    out.emplace(it.key(), std::move(t));
  }
  return out;
}

Status write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (t.dtype() != DType::kF32 && t.dtype() != DType::kI64)
      return error(StatusCode::kUnsupported) << "write_safetensors: " << name;
    header[name] = {{"dtype", t.dtype() == DType::kF32 ? "F32" : "I64"},
                    {"shape", t.shape()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');
  std::ofstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kIoError) << path << ": cannot open for writing";
  uint64_t hlen = h.size();
  f.write(reinterpret_cast<const char*>(&hlen), 8);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& kv : tensors)
    f.write(static_cast<const char*>(kv.second.raw()), static_cast<std::streamsize>(kv.second.nbytes()));
  if (!f) return error(StatusCode::kIoError) << path << ": write failed";
  return Status();
}

Tensor seeded_tensor(const std::string& name, const Shape& shape, InitKind init, uint64_t seed) {
  constexpr uint64_t kGamma = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char b : name) h = (h ^ b) * 0x100000001B3ull;
  const uint64_t state0 = h ^ (seed * kGamma);
  double lo = -0.1, hi = 0.1;
  int64_t fan_in = 1;
  for (size_t i = 1; i < shape.size(); ++i) fan_in *= shape[i];
  switch (init) {
    case InitKind::kKaiming:
      hi = std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(fan_in, 1)));
      lo = -hi;
      break;
    case InitKind::kUniform:
      break;
    case InitKind::kBnScale:
    case InitKind::kBnVar:
      lo = 0.5;
      hi = 1.5;
      break;
    case InitKind::kInput:
      lo = -1.0;
      hi = 1.0;
      break;
    case InitKind::kZeros:
      lo = hi = 0.0;
      break;
    case InitKind::kOnes:
      lo = hi = 1.0;
      break;
  }
  Tensor t(DType::kF32, shape);
  float* p = t.f32();
  const int64_t n = t.numel();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = state0 + static_cast<uint64_t>(i + 1) * kGamma;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    double u = static_cast<double>(z >> 11) * 0x1.0p-53;
    p[i] = static_cast<float>(lo + (hi - lo) * u);
  }
  return t;
}

Status bind_weights_from_file(Graph& g, const std::string& path, const std::vector<std::string>& ignore) {
  FUSERT_ASSIGN_OR_RETURN(auto tensors, read_safetensors(path));
  std::ostringstream problems;
  int count = 0;
  constexpr int kMaxListed = 25;  // a wrong file for the model would list hundreds
  for (ValueId id : g.initializers()) {
    Value& v = g.value(id);
    if (v.is_constant) continue;
    auto it = tensors.find(v.name);
    if (it == tensors.end()) {
      if (count >= kMaxListed) {
        ++count;
        continue;
      }
      problems << "\n  missing: '" << v.name << "' " << shape_str(v.shape);
      ++count;
      continue;
    }
    if (it->second.dtype() != DType::kF32) {
      problems << "\n  wrong dtype: '" << v.name << "' is " << dtype_name(it->second.dtype())
               << ", expected a float type";
      ++count;
    } else if (it->second.shape() != v.shape) {
      problems << "\n  wrong shape: '" << v.name << "' expected " << shape_str(v.shape) << ", got "
               << shape_str(it->second.shape());
      ++count;
    } else {
      v.data = it->second;
    }
    tensors.erase(it);
  }
  for (const auto& kv : tensors) {
    bool ignored = false;
    for (const std::string& pat : ignore) ignored |= fnmatch(pat.c_str(), kv.first.c_str(), 0) == 0;
    if (ignored) continue;
    if (count >= kMaxListed) {
      ++count;
      continue;
    }
    problems << "\n  extra: '" << kv.first << "' " << shape_str(kv.second.shape()) << " is not used by model '"
             << g.name << "'";
    ++count;
  }
  if (count > kMaxListed) problems << "\n  ... and " << count - kMaxListed << " more";
  if (count) {
    return error(StatusCode::kInvalidArgument)
           << path << ": " << count << " weight problem(s) for model '" << g.name << "':" << problems.str();
  }
  return Status();
}

void bind_seeded_weights(Graph& g, uint64_t seed) {
  for (ValueId id : g.initializers()) {
    Value& v = g.value(id);
    if (!v.is_constant) v.data = seeded_tensor(v.name, v.shape, v.init, seed);
  }
}

}  // namespace fusert
