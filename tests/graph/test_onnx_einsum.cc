// ONNX Einsum (imported as Transpose, ReduceSum, Reshape and MatMul: graph/onnx/onnx_einsum.cc)
// against a brute-force einsum written here: every assignment of the letters, products summed in
// double. Matrix products, batches, "...", implicit outputs, sums, transposes, three operands,
// attention's bhqd,bhkd->bhqk; a diagonal and a letter of two sizes are refused.
#include <map>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

// Brute force over letters (no "..."): out[o] = sum over the other letters of prod operands.
std::vector<float> brute(const std::vector<std::string>& ins, const std::string& out, const std::vector<Shape>& shapes,
                         const std::vector<std::vector<float>>& xs) {
  std::map<char, int64_t> size;
  for (size_t i = 0; i < ins.size(); ++i)
    for (size_t d = 0; d < ins[i].size(); ++d) size[ins[i][d]] = shapes[i][d];
  std::string letters;
  for (const auto& [c, n] : size) letters += c;
  int64_t out_n = 1;
  for (char c : out) out_n *= size[c];
  std::vector<double> y(static_cast<size_t>(out_n), 0.0);
  std::map<char, int64_t> at;
  for (char c : letters) at[c] = 0;
  while (true) {
    double p = 1;
    for (size_t i = 0; i < ins.size(); ++i) {
      int64_t off = 0;
      for (char c : ins[i]) off = off * size[c] + at[c];
      p *= xs[i][static_cast<size_t>(off)];
    }
    int64_t o = 0;
    for (char c : out) o = o * size[c] + at[c];
    y[static_cast<size_t>(o)] += p;
    size_t k = letters.size();
    while (k > 0) {
      const char c = letters[k - 1];
      if (++at[c] < size[c]) break;
      at[c] = 0;
      --k;
    }
    if (k == 0) break;
  }
  return std::vector<float>(y.begin(), y.end());
}

std::vector<float> seq(int64_t n, float scale) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(scale * static_cast<float>((i * 7) % 11 - 5));
  return v;
}

Result<TensorMap> run_einsum(const std::string& eq, const std::vector<Shape>& shapes,
                             const std::vector<std::vector<float>>& xs, const char* fusion) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  std::vector<std::string> names;
  TensorMap in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    names.push_back("x" + std::to_string(i));
    add_input(g, names.back(), shapes[i]);
    in[names.back()] = Tensor::f32(shapes[i], xs[i]);
  }
  str_attr(add_node(g, "Einsum", names, {"y"}, "einsum"), "equation", eq);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, "einsum.onnx"), opt);
  if (!s.ok()) return s.status();
  return (*s)->run(in);
}

// `eq` run on seeded inputs of `shapes`, against the brute force on `letters` -> `out` (the
// equation with "..." spelled out) of output shape `ys`.
void check_einsum(const std::string& eq, const std::vector<Shape>& shapes, const std::vector<std::string>& letters,
                  const std::string& out, const Shape& ys) {
  std::vector<std::vector<float>> xs;
  for (size_t i = 0; i < shapes.size(); ++i) xs.push_back(seq(shape_numel(shapes[i]), 0.25f * (i + 1)));
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(eq);
    CAPTURE(fusion);
    auto y = run_einsum(eq, shapes, xs, fusion);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    check_f32(y->at("y"), ys, brute(letters, out, shapes, xs));
  }
}

}  // namespace

TEST_CASE("onnx import: Einsum against a brute-force einsum") {
  check_einsum("ij,jk->ik", {{2, 3}, {3, 4}}, {"ij", "jk"}, "ik", {2, 4});
  check_einsum("ij,jk", {{2, 3}, {3, 4}}, {"ij", "jk"}, "ik", {2, 4});  // implicit output
  check_einsum("bij,bjk->bik", {{2, 2, 3}, {2, 3, 2}}, {"bij", "bjk"}, "bik", {2, 2, 2});
  check_einsum("bhqd,bhkd->bhqk", {{1, 2, 3, 4}, {1, 2, 5, 4}}, {"bhqd", "bhkd"}, "bhqk", {1, 2, 3, 5});
  check_einsum("i,i", {{5}, {5}}, {"i", "i"}, "", {});  // inner product: a scalar
  check_einsum("i,j->ij", {{2}, {3}}, {"i", "j"}, "ij", {2, 3});
  check_einsum("ij->ji", {{2, 3}}, {"ij"}, "ji", {3, 2});
  check_einsum("ij->", {{2, 3}}, {"ij"}, "", {});
  check_einsum("ijk->ki", {{2, 3, 4}}, {"ijk"}, "ki", {4, 2});  // j summed out
  check_einsum("...ij,...jk->...ik", {{2, 2, 3}, {2, 3, 2}}, {"aij", "ajk"}, "aik", {2, 2, 2});
  check_einsum("ij,jk,kl->il", {{2, 3}, {3, 4}, {4, 2}}, {"ij", "jk", "kl"}, "il", {2, 2});
  check_einsum("ab,cb->ca", {{3, 4}, {2, 4}}, {"ab", "cb"}, "ca", {2, 3});  // transposed operands
}

TEST_CASE("onnx import: Einsum refuses a diagonal and a letter of two sizes") {
  auto y = run_einsum("ii->i", {{3, 3}}, {seq(9, 1)}, "all");
  REQUIRE_FALSE(y.ok());
  CHECK(y.status().code() == StatusCode::kUnsupported);
  CHECK(has(y.status().message(), "repeats 'i' in one operand"));
  y = run_einsum("ij,jk->ik", {{2, 3}, {4, 2}}, {seq(6, 1), seq(8, 1)}, "all");
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "letter 'j' is 3 in one operand and 4 in operand 1"));
  y = run_einsum("..ij,jk->ik", {{2, 3}, {3, 2}}, {seq(6, 1), seq(6, 1)}, "all");
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "is malformed"));
  y = run_einsum("...ij,...jk->...ik", {{1, 2, 3}, {5, 3, 2}}, {seq(6, 1), seq(30, 1)}, "all");
  REQUIRE_FALSE(y.ok());
  CHECK(has(y.status().message(), "a dim of '...' is 1 in one operand and 5"));
}
