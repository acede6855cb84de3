// Untrusted files (issue "Safe under threads and untrusted files"): each memory-safety defect a
// mutation fuzz of the loaders found is a regression here. Sizes are bounded before any
// allocation, and every case is a clear error, not a crash, a wrapped size or an abort.
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "apps/preprocess/image.h"
#include "graph/base/tensor.h"
#include "runtime/npy.h"
#include "runtime/session.h"
#include "runtime/weights.h"

using namespace fusert;

namespace {

std::string temp(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("fusert_untrusted_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

std::string write(const std::string& name, const std::string& bytes) {
  std::string p = temp(name);
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

// A version-1 .npy file with `header` (padded as numpy pads it) and `payload` bytes.
std::string npy(const std::string& header, const std::string& payload) {
  std::string h = header;
  while ((10 + h.size() + 1) % 64 != 0) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(h.size() & 0xff);
  out += static_cast<char>(h.size() >> 8);
  return out + h + payload;
}

std::string safetensors(const std::string& header, const std::string& payload) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  return out + header + payload;
}

Result<std::unique_ptr<Session>> load_yaml(const std::string& name, const std::string& yaml, int64_t max_bytes = 0) {
  SessionOptions o;
  o.seeded = true;
  if (max_bytes > 0) o.max_activation_bytes = max_bytes;
  return Session::load(write(name, yaml), o);
}

}  // namespace

TEST_CASE("untrusted: an .npy shape whose element count overflows int64 is an error, not a wrapped buffer") {
  // 2^32 x 2^32 doubles: the count wraps to 0 in 64-bit arithmetic; converting <f8 wrote past the buffer.
  auto r = read_npy(
      write("huge.npy", npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "")));
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().to_string().find("exceeds") != std::string::npos);
  auto r2 = read_npy(
      write("big.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (3037000500, 3037000500), }", "")));
  REQUIRE_FALSE(r2.ok());
}

TEST_CASE("untrusted: an F16/BF16 safetensors entry with an overflowing shape is an error") {
  for (const char* dt : {"F16", "BF16", "F32", "I64"}) {
    CAPTURE(dt);
    std::string header = std::string("{\"w\": {\"dtype\": \"") + dt +
                         "\", \"shape\": [4294967296, 4294967296, 16], \"data_offsets\": [0, 0]}}";
    auto r = read_safetensors(write(std::string("huge_") + dt + ".safetensors", safetensors(header, "")));
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().to_string().find("exceeds") != std::string::npos);
  }
}

TEST_CASE("shape_numel saturates instead of wrapping") {
  CHECK(shape_numel({int64_t{1} << 32, int64_t{1} << 32}) == INT64_MAX);
  CHECK(shape_numel({3, 4}) == 12);
  int64_t n = 0;
  CHECK_FALSE(checked_numel({int64_t{1} << 32, int64_t{1} << 32}, &n));
}

TEST_CASE("untrusted: a Transpose perm is validated before it indexes the shape") {
  auto s = load_yaml("perm.yaml", R"(fusert: 1
name: perm
inputs: [{name: x, shape: [2, 3]}]
outputs: [y]
nodes:
  - {name: t, op: Transpose, inputs: [x], outputs: [y], attrs: {perm: [1000000, 0]}}
)");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().to_string().find("is not a permutation") != std::string::npos);
}

TEST_CASE("untrusted: Conv/Pool pads, strides and kernels near int64 limits are errors") {
  for (const char* attrs : {"pads: [9223372036854775807, 0, 9223372036854775807, 0]",
                            "strides: [9223372036854775807, 1]", "dilations: [4611686018427387904, 1]"}) {
    CAPTURE(attrs);
    auto s = load_yaml("pads.yaml", std::string(R"(fusert: 1
name: pads
inputs: [{name: x, shape: [1, 1, 4, 4]}]
outputs: [y]
initializers: [{name: w, shape: [1, 1, 3, 3]}]
nodes:
  - {name: c, op: Conv, inputs: [x, w], outputs: [y], attrs: {kernel_shape: [3, 3], )") +
                                        attrs + "}}\n");
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().to_string().find("must be <=") != std::string::npos);
  }
}

TEST_CASE("untrusted: a legal model whose activations exceed the session limit is an error before allocation") {
  // 40000 x 40000 floats twice: ~12.8 GB of activations, over the 8 GiB default.
  const std::string huge = R"(fusert: 1
name: huge
inputs: [{name: x, shape: [1, 1, 40000, 40000]}]
outputs: [z]
nodes:
  - {name: a, op: Relu, inputs: [x], outputs: [y]}
  - {name: b, op: Sigmoid, inputs: [y], outputs: [z]}
)";
  auto s = load_yaml("huge.yaml", huge);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().to_string().find("max_activation_bytes") != std::string::npos);
  // The limit is an option: a small model under a 1 KiB limit fails the same way.
  auto t = load_yaml("small.yaml", R"(fusert: 1
name: small
inputs: [{name: x, shape: [1, 1, 32, 32]}]
outputs: [z]
nodes:
  - {name: a, op: Relu, inputs: [x], outputs: [y]}
  - {name: b, op: Sigmoid, inputs: [y], outputs: [z]}
)",
                     1024);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().to_string().find("8192 bytes") != std::string::npos);
}

TEST_CASE(
    "untrusted: declared weights over SessionOptions::max_weight_bytes are an error before any is seeded or read") {
  // Twelve 40000 x 40000 f32 initializers: 76.8 GB declared, over the 16 GiB default; seeding
  // them would allocate before anything else failed.
  std::string yaml = "fusert: 1\nname: heavy\ninputs: [{name: x, shape: [1, 40000]}]\noutputs: [y11]\ninitializers:\n";
  for (int i = 0; i < 12; ++i) yaml += "  - {name: w" + std::to_string(i) + ", shape: [40000, 40000]}\n";
  yaml += "nodes:\n";
  for (int i = 0; i < 12; ++i) {
    yaml += "  - {name: m" + std::to_string(i) + ", op: MatMul, inputs: [" +
            (i == 0 ? std::string("x") : "y" + std::to_string(i - 1)) + ", w" + std::to_string(i) + "], outputs: [y" +
            std::to_string(i) + "]}\n";
  }
  auto s = load_yaml("heavy.yaml", yaml);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().to_string().find("max_weight_bytes (17179869184 bytes)") != std::string::npos);

  // The limit is an option, and it bounds the weights file's size too.
  const std::string small =
      "fusert: 1\nname: small\ninputs: [{name: x, shape: [1, 4]}]\noutputs: [y]\n"
      "initializers: [{name: w, shape: [4, 4]}]\n"
      "nodes:\n  - {name: m, op: MatMul, inputs: [x, w], outputs: [y]}\n";
  SessionOptions o;
  o.seeded = true;
  o.max_weight_bytes = 32;  // w needs 64
  auto t = Session::load(write("small_w.yaml", small), o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().to_string().find("'w' need more than SessionOptions::max_weight_bytes (32 bytes)") !=
        std::string::npos);

  const std::string header = "{\"w\": {\"dtype\": \"F32\", \"shape\": [4, 4], \"data_offsets\": [0, 64]}}";
  const std::string file =
      write("padded.safetensors", safetensors(header, std::string(64, '\0') + std::string(4096, ' ')));
  SessionOptions f;
  f.weights = file;
  f.max_weight_bytes = 1024;  // the declared 64 bytes pass, the 4 KiB file does not
  auto u = Session::load(write("small_f.yaml", small), f);
  REQUIRE_FALSE(u.ok());
  CHECK(u.status().to_string().find("padded.safetensors: weights file of") != std::string::npos);
  f.max_weight_bytes = 8192;
  CHECK(Session::load(write("small_f.yaml", small), f).ok());
}

TEST_CASE("untrusted: a tensor over SessionOptions::max_tensor_elements is an error naming it") {
  SessionOptions o;
  o.seeded = true;
  o.max_tensor_elements = 1000;
  auto s = Session::load(write("elems.yaml", R"(fusert: 1
name: elems
inputs: [{name: x, shape: [1, 1, 32, 32]}]
outputs: [y]
nodes:
  - {name: a, op: Relu, inputs: [x], outputs: [y]}
)"),
                         o);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().to_string().find(
            "tensor 'x' [1, 1, 32, 32] has 1024 elements, more than SessionOptions::max_tensor_elements (1000)") !=
        std::string::npos);
  o.max_tensor_elements = kMaxTensorElements + 1;  // above the ceiling fusert's kernels index
  auto t = Session::load(write("elems.yaml", "fusert: 1\n"), o);
  REQUIRE_FALSE(t.ok());
  CHECK(t.status().to_string().find("max_tensor_elements must be in 1..") != std::string::npos);
}

TEST_CASE("untrusted: images that crashed or misbehaved in make fuzz are clear errors") {
  const std::string dir = std::string(FUSERT_SOURCE_DIR) + "/tests/fuzz_loaders/regressions/image/";
  for (const char* f : {"jpeg_dht_more_than_256_codes.jpg", "jpeg_dht_after_scan.jpg", "jpeg_dht_in_header_info.jpg",
                        "jpeg_dht_after_fill_bytes.jpg"}) {
    CAPTURE(f);
    auto img =
        decode_image(dir + f);  // stb_image (the decoder before libjpeg-turbo) wrote past a Huffman table on these
    REQUIRE_FALSE(img.ok());
    CHECK(img.status().to_string().find("cannot read image") != std::string::npos);
  }
  auto zero = decode_image(dir + "zero_height_image.bin");  // a BMP of height 0
  REQUIRE_FALSE(zero.ok());
  auto huge = decode_image(dir + "png_huge_dims.png");  // 2^24 x 2^24 claimed
  REQUIRE_FALSE(huge.ok());
  CHECK(huge.status().to_string().find("png_huge_dims.png: ") != std::string::npos);
  PreprocessSpec spec;
  spec.resize = 32;
  CHECK_FALSE(preprocess_image(Tensor(DType::kF32, {0, 5, 3}), spec).ok());
}
