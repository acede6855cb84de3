// .npy reading against files numpy wrote (tests/runtime/data, see make_npy_fixtures.py),
// write/read round trips, the writer's header layout, and every rejected file.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "graph/base/tensor.h"
#include "runtime/npy.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using fusert::test::check_message;
using fusert::test::f32_bits;
using fusert::test::read_file;
using fusert::test::scratch;
using fusert::test::write_file;

namespace {

std::string fixture(const std::string& name) { return std::string(FUSERT_TEST_DATA_DIR) + "/runtime/data/" + name; }

std::vector<float> floats(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

void expect_npy_error(const std::string& path, std::initializer_list<std::string> fragments) {
  auto r = read_npy(path);
  REQUIRE_FALSE(r.ok());
  check_message(r.status().message(), {path + ": "});
  check_message(r.status().message(), fragments);
}

}  // namespace

TEST_CASE("read_npy reads what numpy wrote: f32, f64 (converted), i64, i32, bool, 0-d, v2 header") {
  auto f = read_npy(fixture("f32_2x3.npy"));
  REQUIRE(f.ok());
  CHECK(f->dtype() == DType::kF32);
  CHECK(f->shape() == Shape{2, 3});
  CHECK(floats(*f) == std::vector<float>{-1.f, -0.5f, 0.f, 0.5f, 1.f, 1.5f});

  auto d = read_npy(fixture("f64_3.npy"));
  REQUIRE(d.ok());
  CHECK(d->dtype() == DType::kF32);
  CHECK(d->shape() == Shape{3});
  CHECK(f32_bits(d->f32()[0]) == f32_bits(0.1f));  // rounded to nearest float
  CHECK(d->f32()[1] == -2.5f);
  CHECK(d->f32()[2] == 1e10f);

  auto l = read_npy(fixture("i64_4.npy"));
  REQUIRE(l.ok());
  CHECK(l->dtype() == DType::kI64);
  CHECK(std::vector<int64_t>(l->i64(), l->i64() + 4) == std::vector<int64_t>{-1, 0, int64_t{1} << 40, 7});

  auto i = read_npy(fixture("i32_2x2.npy"));
  REQUIRE(i.ok());
  CHECK(i->dtype() == DType::kI32);
  CHECK(i->shape() == Shape{2, 2});
  const int32_t* iv = static_cast<const int32_t*>(i->raw());
  CHECK(std::vector<int32_t>(iv, iv + 4) == std::vector<int32_t>{1, -2, 3, 2147483647});

  auto b = read_npy(fixture("bool_3.npy"));
  REQUIRE(b.ok());
  CHECK(b->dtype() == DType::kBool);
  const uint8_t* bv = static_cast<const uint8_t*>(b->raw());
  CHECK(std::vector<uint8_t>(bv, bv + 3) == std::vector<uint8_t>{1, 0, 1});

  auto u = read_npy(fixture("u8_3.npy"));  // quantised tensors
  REQUIRE(u.ok());
  CHECK(u->dtype() == DType::kU8);
  const uint8_t* uv = static_cast<const uint8_t*>(u->raw());
  CHECK(std::vector<uint8_t>(uv, uv + 3) == std::vector<uint8_t>{1, 2, 3});

  auto s = read_npy(fixture("scalar_f32.npy"));
  REQUIRE(s.ok());
  CHECK(s->shape() == Shape{});
  CHECK(s->f32()[0] == 3.5f);

  auto v2 = read_npy(fixture("v2_f32_5.npy"));
  REQUIRE(v2.ok());
  CHECK(v2->shape() == Shape{5});
  CHECK(floats(*v2) == std::vector<float>{0.25f, 0.5f, 0.75f, 1.f, 1.25f});

  auto e = read_npy(fixture("empty_0x3.npy"));
  REQUIRE(e.ok());
  CHECK(e->shape() == Shape{0, 3});
  CHECK(e->numel() == 0);
}

TEST_CASE("write_npy then read_npy round-trips every writable dtype and rank") {
  Tensor f = Tensor::f32({2, 1, 3}, {1, -2, 3.5f, -0.f, 1e-40f, 7});
  std::string p = scratch("rt_f32.npy");
  REQUIRE(write_npy(p, f).ok());
  auto rf = read_npy(p);
  REQUIRE(rf.ok());
  CHECK(rf->shape() == Shape{2, 1, 3});
  for (int64_t k = 0; k < 6; ++k) CHECK(f32_bits(rf->f32()[k]) == f32_bits(f.f32()[k]));

  Tensor one = Tensor::f32({4}, {1, 2, 3, 4});  // 1-D: numpy writes the tuple as "(4,)"
  REQUIRE(write_npy(scratch("rt_1d.npy"), one).ok());
  auto r1 = read_npy(scratch("rt_1d.npy"));
  REQUIRE(r1.ok());
  CHECK(r1->shape() == Shape{4});
  CHECK(floats(*r1) == std::vector<float>{1, 2, 3, 4});

  Tensor scalar = Tensor::f32({}, {-9.5f});
  REQUIRE(write_npy(scratch("rt_0d.npy"), scalar).ok());
  auto r0 = read_npy(scratch("rt_0d.npy"));
  REQUIRE(r0.ok());
  CHECK(r0->shape() == Shape{});
  CHECK(r0->f32()[0] == -9.5f);

  Tensor l(DType::kI64, {3});
  l.i64()[0] = -5;
  l.i64()[2] = int64_t{1} << 50;
  REQUIRE(write_npy(scratch("rt_i64.npy"), l).ok());
  auto rl = read_npy(scratch("rt_i64.npy"));
  REQUIRE(rl.ok());
  CHECK(rl->dtype() == DType::kI64);
  CHECK(std::vector<int64_t>(rl->i64(), rl->i64() + 3) == std::vector<int64_t>{-5, 0, int64_t{1} << 50});

  Tensor h(DType::kF16, {2});
  Status st = write_npy(scratch("rt_f16.npy"), h);
  CHECK_FALSE(st.ok());
  CHECK(st.code() == StatusCode::kUnsupported);
}

TEST_CASE("write_npy produces a numpy v1.0 header: magic, 64-byte aligned, dict text, newline") {
  std::string p = scratch("layout.npy");
  REQUIRE(write_npy(p, Tensor::f32({2, 3}, {0, 1, 2, 3, 4, 5})).ok());
  std::string bytes = read_file(p);
  REQUIRE(bytes.size() > 10);
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  size_t hlen = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
  CHECK((10 + hlen) % 64 == 0);
  std::string header = bytes.substr(10, hlen);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0) == 0);
  CHECK(header.back() == '\n');
  CHECK(bytes.size() == 10 + hlen + 24);
}

TEST_CASE("read_npy rejects fortran order, unsupported dtypes, truncation and garbage, naming the file") {
  expect_npy_error(fixture("fortran_2x3.npy"), {"not a valid .npy file: fortran_order arrays are not supported"});
  expect_npy_error(fixture("i16_3.npy"), {"unsupported dtype '<i2' (want <f4, <f8, <i8, <i4"});
  expect_npy_error(fixture("be_f4_2.npy"), {"unsupported dtype '>f4'"});

  const std::string whole = read_file(fixture("f32_2x3.npy"));  // 128-byte header + 24 data bytes
  REQUIRE(whole.size() == 152);
  auto cut = [&](size_t n) {
    std::string path = scratch("cut" + std::to_string(n) + ".npy");
    write_file(path, whole.substr(0, n));
    return path;
  };
  expect_npy_error(cut(5), {"not a valid .npy file: bad magic"});
  expect_npy_error(cut(60), {"not a valid .npy file: truncated header"});
  expect_npy_error(cut(140), {"not a valid .npy file: truncated data: expected 24 bytes, got 12"});
  expect_npy_error(cut(151), {"truncated data: expected 24 bytes, got 23"});

  std::string text = scratch("text.npy");
  write_file(text, "this is not a numpy file at all\n");
  expect_npy_error(text, {"not a valid .npy file: bad magic"});

  auto missing = read_npy("/nonexistent/x.npy");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  check_message(missing.status().message(), {"/nonexistent/x.npy: cannot open file"});
}

TEST_CASE("read_npy rejects a shape that is not a tuple of integers and an unknown format version") {
  // A v1 header: magic, version, little-endian length, then the dict padded to 64 bytes.
  auto header_file = [](const std::string& name, const std::string& dict, char major) {
    std::string h = dict;
    while ((10 + h.size() + 1) % 64 != 0) h += ' ';
    h += '\n';
    std::string file = std::string("\x93NUMPY", 6) + major + '\0';
    file += static_cast<char>(h.size() & 0xff);
    file += static_cast<char>(h.size() >> 8);
    file += h + std::string(32, '\0');
    const std::string path = scratch(name);
    write_file(path, file);
    return path;
  };
  expect_npy_error(header_file("pow.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2**62, 4), }", 1),
                   {"not a valid .npy file: shape entry '2**62' is not an integer"});
  expect_npy_error(header_file("open.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 10, }", 1),
                   {"not a valid .npy file: no 'shape': (...) in the header"});
  expect_npy_error(header_file("v9.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", 9),
                   {"not a valid .npy file: format version 9 (1, 2 or 3 read)"});
  auto py2 = read_npy(header_file("py2.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 4L), }", 1));
  REQUIRE_MESSAGE(py2.ok(), py2.status().to_string());
  CHECK(py2->shape() == Shape{2, 4});
}
