// Seeded initialisation (models/FORMAT.md) against reference bits from tools/seeded_init.py,
// and binding seeded weights to a graph.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/loader/model_loader.h"
#include "runtime/weights.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using fusert::test::bits_f32;
using fusert::test::f32_bits;

namespace {

std::vector<uint32_t> bits_of(const Tensor& t) {
  std::vector<uint32_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(f32_bits(t.f32()[i]));
  return out;
}

}  // namespace

TEST_CASE("seeded_tensor matches tools/seeded_init.py bit for bit") {
  struct Case {
    const char* name;
    Shape shape;
    InitKind init;
    uint64_t seed;
    std::vector<std::pair<int64_t, uint32_t>> bits;  // (flat index, float32 bits)
  };
  // Reference values printed by /usr/bin/python3 tools/seeded_init.py (numpy, vectorised and
  // checked against its plain-integer transcription of models/FORMAT.md).
  const std::vector<Case> cases = {
      {"conv1.weight",
       {64, 3, 7, 7},
       InitKind::kKaiming,
       0,
       {{0, 0x3c53009e}, {1, 0x3d8f7464}, {2, 0xbe0b9458}, {3, 0x3d8a35a0}, {1000, 0x3b576c05}, {9407, 0xbdafb286}}},
      {"conv1.weight",
       {64, 3, 7, 7},
       InitKind::kKaiming,
       1,
       {{0, 0xbe108a8e}, {1, 0x3d8d7b25}, {2, 0x3d7203d2}, {3, 0x3c840254}, {9407, 0xbdc0809c}}},
      {"bn1.weight",
       {64},
       InitKind::kBnScale,
       0,
       {{0, 0x3f5c3655}, {1, 0x3fa9863d}, {2, 0x3f88db26}, {3, 0x3f3fd888}, {63, 0x3f7c0903}}},
      {"layer1.0.bn1.running_var",
       {64},
       InitKind::kBnVar,
       0,
       {{0, 0x3f92b807}, {1, 0x3fab4ccf}, {2, 0x3fa3ffd0}, {3, 0x3f279724}, {63, 0x3fb428b5}}},
      {"fc.bias",
       {1000},
       InitKind::kUniform,
       0,
       {{0, 0xbb9276e3}, {1, 0xbb7c8d4a}, {2, 0xbd342c1d}, {3, 0xbd299a17}, {999, 0xbd09b40a}}},
      {"fc.bias",
       {1000},
       InitKind::kUniform,
       1,
       {{0, 0x3dbd3e7d}, {1, 0xbd89b678}, {2, 0xbdb9c578}, {3, 0x3d9341c0}, {999, 0x3cfccc57}}},
      {"input",
       {1, 3, 224, 224},
       InitKind::kInput,
       0,
       {{0, 0xbf4deac1}, {1, 0x3e9c045f}, {2, 0xbf17be8f}, {3, 0xbee6f7fa}, {150527, 0xbe4dd348}}},
      {"input",
       {1, 3, 5, 5},
       InitKind::kInput,
       7,
       {{0, 0xbdf957dc}, {1, 0x3db055ed}, {2, 0xbf290d72}, {3, 0x3f1330e1}, {74, 0x3f770fed}}},
      {"x",
       {13},
       InitKind::kInput,
       0,
       {{0, 0xbf18fb3a}, {1, 0x3f1df738}, {2, 0x3e92c36e}, {3, 0x3f27fdf5}, {12, 0xbf151064}}},
      // fan_in = 2: bound sqrt(3 / 2); the largest seed wraps seed * golden modulo 2^64.
      {"w",
       {4, 2},
       InitKind::kKaiming,
       0,
       {{0, 0x3f78fb0b}, {1, 0x3f2f15fb}, {2, 0xbf9b7f4f}, {3, 0xbf5ad447}, {7, 0x3f48366c}}},
      {"w",
       {4, 2},
       InitKind::kKaiming,
       UINT64_MAX,
       {{0, 0x3f23c644}, {1, 0x3e38c031}, {2, 0xbf2bb2c0}, {3, 0xbf5c2428}, {7, 0x3dc56e3c}}},
      {"\xc3\xa9", {3}, InitKind::kUniform, 0, {{0, 0xbc6498b4}, {1, 0xbd97e00d}, {2, 0xbdb31099}}},  // "é", UTF-8
  };
  for (const Case& c : cases) {
    INFO(c.name << " seed " << c.seed);
    Tensor t = seeded_tensor(c.name, c.shape, c.init, c.seed);
    CHECK(t.dtype() == DType::kF32);
    CHECK(t.shape() == c.shape);
    for (const auto& entry : c.bits) {  // no structured binding: clang cannot capture one in INFO
      const auto i = entry.first;
      const auto bits = entry.second;
      INFO("index " << i);
      CHECK(f32_bits(t.f32()[i]) == bits);
    }
  }
}

TEST_CASE("seeded_tensor: ranges, constants and sums against the reference") {
  // conv1.weight kaiming: fan_in 147, bound sqrt(3 / 147); sum(f64) from the reference.
  Tensor k = seeded_tensor("conv1.weight", {64, 3, 7, 7}, InitKind::kKaiming, 0);
  double bound = std::sqrt(3.0 / 147.0), sum = 0;
  bool in_range = true;
  for (int64_t i = 0; i < k.numel(); ++i) {
    in_range = in_range && std::fabs(k.f32()[i]) <= bound;
    sum += k.f32()[i];
  }
  CHECK(in_range);
  CHECK(sum == doctest::Approx(-7.482811035060877).epsilon(1e-12));
  Tensor bn = seeded_tensor("layer1.0.bn1.running_var", {64}, InitKind::kBnVar, 0);
  double bsum = 0;
  for (int64_t i = 0; i < 64; ++i) bsum += bn.f32()[i];
  CHECK(bsum == doctest::Approx(65.96185785531998).epsilon(1e-12));
  Tensor z = seeded_tensor("zz", {5}, InitKind::kZeros, 3);
  Tensor o = seeded_tensor("oo", {2, 2}, InitKind::kOnes, 3);
  for (int64_t i = 0; i < 5; ++i) CHECK(f32_bits(z.f32()[i]) == 0u);
  for (int64_t i = 0; i < 4; ++i) CHECK(o.f32()[i] == 1.f);
  // A different name or seed gives a different stream.
  CHECK(f32_bits(seeded_tensor("a", {1}, InitKind::kUniform, 0).f32()[0]) !=
        f32_bits(seeded_tensor("b", {1}, InitKind::kUniform, 0).f32()[0]));
  CHECK(bits_f32(0x3f800000) == 1.f);
}

TEST_CASE("bind_seeded_weights fills weights by name and init kind, not constants") {
  auto m = load_model_from_string(R"(fusert: 1
name: wm
inputs: [{name: x, shape: [1, 3]}]
outputs: [y]
initializers:
  - {name: fc.weight, shape: [2, 3]}
  - {name: fc.bias, shape: [2]}
  - {name: k, shape: [2], value: [1, 1]}
nodes:
  - {name: fc, op: Gemm, inputs: [x, fc.weight, fc.bias], outputs: [g], attrs: {transB: 1}}
  - {name: u, op: Mul, inputs: [g, k], outputs: [y]}
)",
                                  "wm.yaml");
  REQUIRE(m.ok());
  bind_seeded_weights(m->graph, 1);
  const Graph& g = m->graph;
  // fc.weight [2, 3] defaults to kaiming (rank 2), fc.bias to uniform (rank 1).
  Tensor w = seeded_tensor("fc.weight", {2, 3}, InitKind::kKaiming, 1);
  Tensor b = seeded_tensor("fc.bias", {2}, InitKind::kUniform, 1);
  CHECK(bits_of(g.value(g.find_value("fc.weight")).data) == bits_of(w));
  CHECK(bits_of(g.value(g.find_value("fc.bias")).data) == bits_of(b));
  CHECK(bits_of(g.value(g.find_value("k")).data) == std::vector<uint32_t>{0x3f800000, 0x3f800000});
}
