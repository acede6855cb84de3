// safetensors: write/read round trip, hand-built F16/BF16 files with known bit patterns, every
// kind of corrupt file (each error names the file and, where one is at fault, the tensor), and
// binding a file to a graph's initializers.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "graph/loader/model_loader.h"
#include "runtime/weights.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using fusert::test::check_message;
using fusert::test::f32_bits;
using fusert::test::read_file;
using fusert::test::scratch;
using fusert::test::write_file;

namespace {

std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

std::string u16_bytes(const std::vector<uint16_t>& v) {
  std::string s;
  for (uint16_t h : v) {
    s.push_back(static_cast<char>(h & 0xff));
    s.push_back(static_cast<char>(h >> 8));
  }
  return s;
}

/// A safetensors file from a header text and a data section, as bytes.
std::string st_file(const std::string& header, const std::string& data) { return le64(header.size()) + header + data; }

/// Writes `bytes` to a scratch file and reads it back as safetensors.
Result<std::map<std::string, Tensor>> read_bytes(const std::string& name, const std::string& bytes) {
  std::string path = scratch(name);
  write_file(path, bytes);
  return read_safetensors(path);
}

/// Expects read_safetensors to fail with a message holding the path and every fragment.
void expect_st_error(const std::string& name, const std::string& bytes, std::initializer_list<std::string> fragments) {
  auto r = read_bytes(name, bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kParseError);
  check_message(r.status().message(), {scratch(name) + ": "});
  check_message(r.status().message(), fragments);
}

// The bit pattern of each element of an f32 tensor.
std::vector<uint32_t> bits_of(const Tensor& t) {
  std::vector<uint32_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(f32_bits(t.f32()[i]));
  return out;
}

}  // namespace

TEST_CASE("write_safetensors then read_safetensors round-trips f32 and i64, byte layout by hand") {
  Tensor a = Tensor::f32({2, 3}, {1.5f, -2.f, 0.f, 3.25f, -0.f, 1e-30f});
  Tensor b(DType::kI64, {2});
  b.i64()[0] = -7;
  b.i64()[1] = int64_t{1} << 40;
  Tensor s = Tensor::f32({}, {42.f});
  std::string path = scratch("roundtrip.safetensors");
  REQUIRE(write_safetensors(path, {{"a", a}, {"b", b}, {"s", s}}).ok());

  // Layout: 8-byte little-endian header length, JSON header (padded to 8), data in name order.
  std::string bytes = read_file(path);
  REQUIRE(bytes.size() >= 8);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  CHECK(hlen % 8 == 0);
  CHECK(bytes.size() == 8 + hlen + 24 + 16 + 4);
  auto header = nlohmann::json::parse(bytes.substr(8, hlen));
  CHECK(header["a"]["dtype"] == "F32");
  CHECK(header["a"]["shape"] == nlohmann::json::array({2, 3}));
  CHECK(header["a"]["data_offsets"] == nlohmann::json::array({0, 24}));
  CHECK(header["b"]["dtype"] == "I64");
  CHECK(header["b"]["data_offsets"] == nlohmann::json::array({24, 40}));
  CHECK(header["s"]["shape"] == nlohmann::json::array());
  CHECK(header["s"]["data_offsets"] == nlohmann::json::array({40, 44}));

  auto r = read_safetensors(path);
  REQUIRE(r.ok());
  const auto& m = r.value();
  REQUIRE(m.size() == 3);
  CHECK(m.at("a").dtype() == DType::kF32);
  CHECK(m.at("a").shape() == Shape{2, 3});
  CHECK(bits_of(m.at("a")) == bits_of(a));  // bit-exact, including -0 and a tiny value
  CHECK(m.at("b").dtype() == DType::kI64);
  CHECK(m.at("b").i64()[0] == -7);
  CHECK(m.at("b").i64()[1] == int64_t{1} << 40);
  CHECK(m.at("s").shape() == Shape{});
  CHECK(m.at("s").f32()[0] == 42.f);
}

TEST_CASE("F16 tensors convert exactly: normals, subnormals, signed zero, infinities, NaN") {
  // Half bit patterns and the float32 bits numpy's float16 -> float32 conversion gives.
  const std::vector<uint16_t> half = {0x3C00, 0xC000, 0x0001, 0x8001, 0x0200, 0x03FF, 0x0400,
                                      0x7BFF, 0x8000, 0x7C00, 0xFC00, 0x3555, 0x7E00};
  const std::vector<uint32_t> want = {0x3f800000, 0xc0000000, 0x33800000, 0xb3800000, 0x38000000,
                                      0x387fc000, 0x38800000, 0x477fe000, 0x80000000, 0x7f800000,
                                      0xff800000, 0x3eaaa000, 0x7fc00000};
  std::string header = R"({"h":{"dtype":"F16","shape":[13],"data_offsets":[0,26]},"__metadata__":{"format":"pt"}})";
  auto r = read_bytes("f16.safetensors", st_file(header, u16_bytes(half)));
  REQUIRE(r.ok());
  REQUIRE(r->size() == 1);  // __metadata__ is not a tensor
  const Tensor& t = r->at("h");
  CHECK(t.dtype() == DType::kF32);
  CHECK(t.shape() == Shape{13});
  CHECK(bits_of(t) == want);
  CHECK(t.f32()[0] == 1.0f);
  CHECK(t.f32()[1] == -2.0f);
  CHECK(t.f32()[2] == doctest::Approx(5.96e-8).epsilon(1e-3));
  CHECK(t.f32()[7] == 65504.0f);
  CHECK(std::isnan(t.f32()[12]));
}

TEST_CASE("BF16 tensors convert exactly (the upper 16 bits of float32)") {
  const std::vector<uint16_t> bf = {0x3F80, 0xC000, 0x4049, 0x0001, 0x7F80, 0xFF80, 0x7FC0, 0x8000, 0x3E80};
  const std::vector<uint32_t> want = {0x3f800000, 0xc0000000, 0x40490000, 0x00010000, 0x7f800000,
                                      0xff800000, 0x7fc00000, 0x80000000, 0x3e800000};
  // Two tensors, the BF16 one second, so its offsets do not start at 0.
  std::string header = R"({"first":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                       R"("b":{"dtype":"BF16","shape":[3,3],"data_offsets":[4,22]}})";
  std::string data = le64(0).substr(0, 4) + u16_bytes(bf);
  auto r = read_bytes("bf16.safetensors", st_file(header, data));
  REQUIRE(r.ok());
  const Tensor& t = r->at("b");
  CHECK(t.shape() == Shape{3, 3});
  CHECK(bits_of(t) == want);
  CHECK(t.f32()[0] == 1.0f);
  CHECK(t.f32()[2] == 3.140625f);
  CHECK(t.f32()[8] == 0.25f);
  CHECK(r->at("first").f32()[0] == 0.0f);
}

TEST_CASE("truncated safetensors files: inside the length, inside the header, inside the data") {
  std::string path = scratch("whole.safetensors");
  REQUIRE(write_safetensors(path, {{"a", Tensor::f32({6}, {1, 2, 3, 4, 5, 6})}, {"b", Tensor::f32({4}, {7, 8, 9, 10})}})
              .ok());
  const std::string whole = read_file(path);
  uint64_t hlen = 0;
  for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | static_cast<uint8_t>(whole[static_cast<size_t>(i)]);
  REQUIRE(whole.size() == 8 + hlen + 40);

  expect_st_error("cut0.safetensors", whole.substr(0, 0), {"empty file, not a safetensors file"});
  expect_st_error("cut4.safetensors", whole.substr(0, 4), {"truncated safetensors file (4 bytes, no header)"});
  expect_st_error("cut7.safetensors", whole.substr(0, 7), {"truncated safetensors file (7 bytes, no header)"});
  expect_st_error("cut8.safetensors", whole.substr(0, 8),
                  {"header size " + std::to_string(hlen) + " exceeds the file (8 bytes)"});
  expect_st_error("cuth.safetensors", whole.substr(0, 8 + hlen / 2),
                  {"corrupt or truncated safetensors file: header size " + std::to_string(hlen) + " exceeds the file"});
  // Cut after 30 of 40 data bytes: 'a' (bytes 0..24) is whole, 'b' (24..40) is not.
  auto r = read_bytes("cutd.safetensors", whole.substr(0, 8 + hlen + 30));
  REQUIRE_FALSE(r.ok());
  check_message(r.status().message(),
                {scratch("cutd.safetensors") + ": tensor 'b': data_offsets outside the data section"});
  CHECK(r.status().message().find("'a'") == std::string::npos);
  // One byte short at the very end.
  auto r2 = read_bytes("cut_last.safetensors", whole.substr(0, whole.size() - 1));
  REQUIRE_FALSE(r2.ok());
  check_message(r2.status().message(), {"tensor 'b'", "(file truncated?)"});
}

TEST_CASE("corrupt headers: length past the end, bad JSON, not an object, bad entries") {
  expect_st_error("huge.safetensors", le64(1000000) + "{}", {"header size 1000000 exceeds the file (10 bytes)"});
  expect_st_error("max.safetensors", le64(UINT64_MAX) + "{}", {"header size 18446744073709551615 exceeds the file"});
  expect_st_error("json.safetensors", st_file("{\"a\": {\"dtype\": \"F32\",", ""),
                  {"corrupt safetensors header (JSON)"});
  expect_st_error("empty_header.safetensors", st_file("", ""), {"corrupt safetensors header (JSON)"});
  expect_st_error("array.safetensors", st_file("[1, 2]", ""), {"safetensors header is not a JSON object"});
  expect_st_error("nodtype.safetensors", st_file(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
                  {"tensor 'w': header entry needs dtype, shape and data_offsets"});
  expect_st_error("badshape.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":"x","data_offsets":[0,4]}})", std::string(4, '\0')),
                  {"tensor 'w': bad header entry"});
  expect_st_error("baddtype.safetensors",
                  st_file(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
                  {"tensor 'w': bad header entry"});
  expect_st_error("negdim.safetensors",
                  st_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", std::string(4, '\0')),
                  {"tensor 'w': negative dimension"});
}

TEST_CASE("offsets past the end, reversed offsets, shape/size mismatch, unsupported dtype") {
  const std::string data16(16, '\0');
  expect_st_error("past.safetensors", st_file(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", data16),
                  {"tensor 'w': data_offsets outside the data section"});
  expect_st_error("rev.safetensors", st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", data16),
                  {"tensor 'w': data_offsets outside the data section"});
  expect_st_error("three.safetensors", st_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", data16),
                  {"tensor 'w': data_offsets outside the data section"});
  expect_st_error("size.safetensors", st_file(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", data16),
                  {"tensor 'w': shape [2, 2] needs 16 bytes, data_offsets give 12"});
  expect_st_error("size16.safetensors", st_file(R"({"h":{"dtype":"F16","shape":[3],"data_offsets":[0,8]}})", data16),
                  {"tensor 'h': shape [3] needs 6 bytes, data_offsets give 8"});
  expect_st_error("f64.safetensors", st_file(R"({"d":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", data16),
                  {"tensor 'd': unsupported dtype F64 (F32, F16, BF16, I64)"});
  expect_st_error("u8.safetensors", st_file(R"({"u":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}})", data16),
                  {"tensor 'u': unsupported dtype U8"});
}

TEST_CASE("a missing weights file names the path") {
  auto r = read_safetensors("/nonexistent/w.safetensors");
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  check_message(r.status().message(), {"/nonexistent/w.safetensors: cannot open weights file"});
}

namespace {

const char* kWeightsModel = R"(fusert: 1
name: wm
inputs: [{name: x, shape: [1, 3]}]
outputs: [y]
initializers:
  - {name: fc.weight, shape: [2, 3]}
  - {name: fc.bias, shape: [2]}
  - {name: scale, shape: [2]}
  - {name: shift, shape: [2]}
  - {name: k, shape: [2], value: [1, 1]}
nodes:
  - {name: fc, op: Gemm, inputs: [x, fc.weight, fc.bias], outputs: [g], attrs: {transB: 1}}
  - {name: s, op: Mul, inputs: [g, scale], outputs: [m]}
  - {name: t, op: Add, inputs: [m, shift], outputs: [a]}
  - {name: u, op: Mul, inputs: [a, k], outputs: [y]}
)";

}  // namespace

TEST_CASE("bind_weights_from_file binds every weight and leaves constants alone") {
  auto m = load_model_from_string(kWeightsModel, "wm.yaml");
  REQUIRE(m.ok());
  std::string path = scratch("good.safetensors");
  REQUIRE(write_safetensors(path, {{"fc.weight", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                                   {"fc.bias", Tensor::f32({2}, {0.5f, -0.5f})},
                                   {"scale", Tensor::f32({2}, {2, 3})},
                                   {"shift", Tensor::f32({2}, {-1, 1})}})
              .ok());
  Graph& g = m->graph;
  REQUIRE(bind_weights_from_file(g, path).ok());
  const Value& w = g.value(g.find_value("fc.weight"));
  REQUIRE_FALSE(w.data.empty());
  CHECK(w.data.f32()[5] == 6.f);
  CHECK(g.value(g.find_value("shift")).data.f32()[0] == -1.f);
  CHECK(g.value(g.find_value("k")).data.f32()[1] == 1.f);  // constant kept
}

TEST_CASE("bind_weights_from_file converts F16 weights") {
  auto m = load_model_from_string(kWeightsModel, "wm.yaml");
  REQUIRE(m.ok());
  // fc.weight as F16 (6 halves), the rest F32.
  std::string header = R"({"fc.weight":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},)"
                       R"("fc.bias":{"dtype":"F32","shape":[2],"data_offsets":[12,20]},)"
                       R"("scale":{"dtype":"F32","shape":[2],"data_offsets":[20,28]},)"
                       R"("shift":{"dtype":"BF16","shape":[2],"data_offsets":[28,32]}})";
  std::string data =
      u16_bytes({0x3C00, 0xC000, 0x3800, 0x0000, 0x4200, 0xBC00}) + std::string(16, '\0') + u16_bytes({0x3F80, 0xC040});
  std::string path = scratch("f16w.safetensors");
  write_file(path, st_file(header, data));
  REQUIRE(bind_weights_from_file(m->graph, path).ok());
  const Tensor& w = m->graph.value(m->graph.find_value("fc.weight")).data;
  CHECK(std::vector<float>(w.f32(), w.f32() + 6) == std::vector<float>{1, -2, 0.5f, 0, 3, -1});
  const Tensor& sh = m->graph.value(m->graph.find_value("shift")).data;
  CHECK(sh.f32()[0] == 1.f);
  CHECK(sh.f32()[1] == -3.f);
}

TEST_CASE("bind_weights_from_file lists missing, extra, mis-shaped and mis-typed tensors in one error") {
  auto m = load_model_from_string(kWeightsModel, "wm.yaml");
  REQUIRE(m.ok());
  Tensor ids(DType::kI64, {2});
  std::string path = scratch("bad.safetensors");
  REQUIRE(write_safetensors(path, {{"fc.weight", Tensor::f32({3, 2}, {1, 2, 3, 4, 5, 6})},  // transposed shape
                                   {"fc.bias", Tensor::f32({2}, {0, 0})},                   // fine
                                   {"scale", ids},                                          // I64
                                   {"bogus", Tensor::f32({1}, {0})},                        // extra
                                   {"k", Tensor::f32({2}, {0, 0})}})
              .ok());  // constant: extra
  // "shift" is missing.
  Status st = bind_weights_from_file(m->graph, path);
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == StatusCode::kInvalidArgument);
  check_message(
      st.message(),
      {path + ": 5 weight problem(s) for model 'wm':", "\n  wrong shape: 'fc.weight' expected [2, 3], got [3, 2]",
       "\n  wrong dtype: 'scale' is i64, expected a float type", "\n  missing: 'shift' [2]",
       "\n  extra: 'bogus' [1] is not used by model 'wm'", "\n  extra: 'k' [2] is not used by model 'wm'"});
  CHECK(st.message().find("fc.bias") == std::string::npos);
}

TEST_CASE("bind_weights_from_file caps a long problem list and counts the rest") {
  std::string yaml = "fusert: 1\nname: many\ninputs: [{name: x, shape: [1]}]\noutputs: [y]\ninitializers:\n";
  for (int i = 0; i < 30; ++i) yaml += "  - {name: w" + std::to_string(i) + ", shape: [1]}\n";
  yaml += "nodes:\n  - {name: a, op: Add, inputs: [x, w0], outputs: [y]}\n";
  auto m = load_model_from_string(yaml, "many.yaml");
  REQUIRE(m.ok());
  std::string path = scratch("other.safetensors");
  REQUIRE(write_safetensors(path, {{"unrelated", Tensor::f32({1}, {0})}}).ok());
  Status st = bind_weights_from_file(m->graph, path);
  REQUIRE_FALSE(st.ok());
  check_message(st.message(), {"31 weight problem(s)", "missing: 'w0'", "\n  ... and 6 more"});
  size_t listed = 0;
  for (size_t p = st.message().find("\n  missing"); p != std::string::npos; p = st.message().find("\n  missing", p + 1))
    ++listed;
  CHECK(listed == 25);
}

TEST_CASE("bind_weights_from_file on an unreadable file passes the reader's error through") {
  auto m = load_model_from_string(kWeightsModel, "wm.yaml");
  REQUIRE(m.ok());
  std::string path = scratch("trunc_bind.safetensors");
  write_file(path, std::string("\x10\x00\x00", 3));
  Status st = bind_weights_from_file(m->graph, path);
  REQUIRE_FALSE(st.ok());
  check_message(st.message(), {path + ": truncated safetensors file (3 bytes, no header)"});
}
