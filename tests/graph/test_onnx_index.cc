// ONNX GatherElements, ScatterElements (and opset 9's Scatter), Trilu, CumSum, DepthToSpace,
// SpaceToDepth, Sum, Mean and CastLike imported and run, against values worked out by hand from
// the ONNX operator definitions (the operators' documented examples where they have one).
// Indices are graph inputs, so the run-time range check is exercised too.
#include <functional>
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

Tensor i64(const Shape& s, const std::vector<int64_t>& v) {
  Tensor t(DType::kI64, s);
  std::copy(v.begin(), v.end(), t.i64());
  return t;
}

int elem_of(const Tensor& t) {
  return t.dtype() == DType::kI64   ? onnx::TensorProto::INT64
         : t.dtype() == DType::kI32 ? onnx::TensorProto::INT32
                                    : onnx::TensorProto::FLOAT;
}

// One node of `op` on graph inputs `ins` (named as given), `extra` constant inputs after them
// (i64 1-D initializers), attributes set by `attrs`; returns output "y" or the error.
Result<Tensor> try_run(const std::string& op, const std::vector<std::pair<std::string, Tensor>>& ins,
                       const std::function<void(onnx::NodeProto*)>& attrs = {},
                       const std::vector<std::pair<std::string, std::vector<int64_t>>>& consts = {}, int64_t opset = 17,
                       const char* fusion = "all") {
  auto m = model(opset);
  auto* g = m.mutable_graph();
  std::vector<std::string> names;
  TensorMap feed;
  for (const auto& [name, t] : ins) {
    add_input(g, name, t.shape(), "", -1, elem_of(t));
    names.push_back(name);
    feed.emplace(name, t.clone());
  }
  for (const auto& [name, v] : consts) {
    add_i64(g, name, v);
    names.push_back(name);
  }
  auto* n = add_node(g, op, names, {"y"}, "n0");
  if (attrs) attrs(n);
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  FUSERT_ASSIGN_OR_RETURN(auto s, Session::load(save(m, op + ".onnx"), opt));
  FUSERT_ASSIGN_OR_RETURN(auto y, s->run(feed));
  return y.at("y").clone();
}

Tensor run(const std::string& op, const std::vector<std::pair<std::string, Tensor>>& ins,
           const std::function<void(onnx::NodeProto*)>& attrs = {},
           const std::vector<std::pair<std::string, std::vector<int64_t>>>& consts = {}, int64_t opset = 17) {
  auto y = try_run(op, ins, attrs, consts, opset);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return std::move(*y);
}

void check_i64(const Tensor& t, const Shape& shape, const std::vector<int64_t>& want) {
  REQUIRE(t.dtype() == DType::kI64);
  REQUIRE(t.shape() == shape);
  for (size_t i = 0; i < want.size(); ++i) CHECK_MESSAGE(t.i64()[i] == want[i], "element " << i);
}

auto axis(int64_t a) {
  return [a](onnx::NodeProto* n) { int_attr(n, "axis", a); };
}

}  // namespace

TEST_CASE("onnx import: GatherElements by hand (ONNX's examples, negative indices, i64 data, range error)") {
  // ONNX's example 1: axis 1, data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]] -> [[1, 1], [4, 3]].
  check_f32(
      run("GatherElements", {{"x", Tensor::f32({2, 2}, {1, 2, 3, 4})}, {"i", i64({2, 2}, {0, 0, 1, 0})}}, axis(1)),
      {2, 2}, {1, 1, 4, 3});
  // Example 2: axis 0, indices [[1, 2, 0], [2, 0, 0]] -> [[4, 8, 3], [7, 2, 3]]; the same with
  // negative indices [[-2, -1, 0], [-1, 0, 0]]; indices with fewer rows than data (axis dim).
  const Tensor x = Tensor::f32({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  check_f32(run("GatherElements", {{"x", x.clone()}, {"i", i64({2, 3}, {1, 2, 0, 2, 0, 0})}}, axis(0)), {2, 3},
            {4, 8, 3, 7, 2, 3});
  check_f32(run("GatherElements", {{"x", x.clone()}, {"i", i64({2, 3}, {-2, -1, 0, -1, 0, 0})}}, axis(0)), {2, 3},
            {4, 8, 3, 7, 2, 3});
  check_i64(run("GatherElements", {{"x", i64({2, 3}, {10, 11, 12, 13, 14, 15})}, {"i", i64({2, 1}, {2, 0})}}, axis(-1)),
            {2, 1}, {12, 13});
  auto bad = try_run("GatherElements", {{"x", x.clone()}, {"i", i64({1, 3}, {0, 3, 0})}}, axis(0));
  REQUIRE_FALSE(bad.ok());
  CHECK_MESSAGE(has(bad.status().message(), "index 3 at position 1 of 'i' is out of range [-3, 3)"),
                bad.status().message());
  CHECK(has(bad.status().message(), "node 'n0' (GatherElements)"));
}

TEST_CASE("onnx import: ScatterElements by hand (ONNX's examples, duplicates with each reduction, Scatter-9)") {
  // ONNX's example 1: axis 0 into zeros [3, 3].
  const std::vector<std::pair<std::string, Tensor>> ex1 = {
      {"x", Tensor::f32({3, 3}, std::vector<float>(9, 0.f))},
      {"i", i64({2, 3}, {1, 0, 2, 0, 2, 1})},
      {"u", Tensor::f32({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f})}};
  const std::vector<float> want1 = {2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f};
  check_f32(run("ScatterElements",
                {{"x", ex1[0].second.clone()}, {"i", ex1[1].second.clone()}, {"u", ex1[2].second.clone()}}),
            {3, 3}, want1);
  check_f32(run("Scatter", {{"x", ex1[0].second.clone()}, {"i", ex1[1].second.clone()}, {"u", ex1[2].second.clone()}},
                {}, {}, 9),
            {3, 3}, want1);
  // Example 2: axis 1, data [[1, 2, 3, 4, 5]], indices [[1, 3]], updates [[1.1, 2.1]].
  auto ex2 = [](const char* reduction, const std::vector<int64_t>& idx) {
    return run(
        "ScatterElements",
        {{"x", Tensor::f32({1, 5}, {1, 2, 3, 4, 5})},
         {"i", i64({1, 2}, idx)},
         {"u", Tensor::f32({1, 2}, {1.1f, 2.1f})}},
        [reduction](onnx::NodeProto* n) {
          int_attr(n, "axis", 1);
          if (reduction) str_attr(n, "reduction", reduction);
        },
        {}, 18);
  };
  check_f32(ex2(nullptr, {1, 3}), {1, 5}, {1, 1.1f, 3, 2.1f, 5});
  check_f32(ex2(nullptr, {-4, -2}), {1, 5}, {1, 1.1f, 3, 2.1f, 5});
  // Duplicate index 1: the updates combine in index order.
  check_f32(ex2("add", {1, 1}), {1, 5}, {1, 2 + 1.1f + 2.1f, 3, 4, 5});
  check_f32(ex2("mul", {1, 1}), {1, 5}, {1, 2 * 1.1f * 2.1f, 3, 4, 5});
  check_f32(ex2("max", {1, 1}), {1, 5}, {1, 2.1f, 3, 4, 5});
  check_f32(ex2("min", {1, 1}), {1, 5}, {1, 1.1f, 3, 4, 5});
  check_f32(ex2(nullptr, {1, 1}), {1, 5}, {1, 2.1f, 3, 4, 5});  // none: the last write wins
}

TEST_CASE("onnx import: Trilu by hand (upper, lower, k from a constant, i64 batches)") {
  const Tensor x = Tensor::f32({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  auto trilu = [&](bool upper, std::vector<std::pair<std::string, std::vector<int64_t>>> k) {
    return run(
        "Trilu", {{"x", x.clone()}}, [upper](onnx::NodeProto* n) { int_attr(n, "upper", upper ? 1 : 0); }, k);
  };
  check_f32(trilu(true, {}), {3, 4}, {1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
  check_f32(trilu(false, {}), {3, 4}, {1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
  check_f32(trilu(true, {{"k", {-1}}}), {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12});
  check_f32(trilu(false, {{"k", {1}}}), {3, 4}, {1, 2, 0, 0, 5, 6, 7, 0, 9, 10, 11, 12});
  check_f32(trilu(true, {{"k", {9}}}), {3, 4}, std::vector<float>(12, 0.f));    // beyond the last column
  check_f32(trilu(false, {{"k", {-9}}}), {3, 4}, std::vector<float>(12, 0.f));  // below the first row
  // i64, two [2, 2] matrices, upper.
  check_i64(run("Trilu", {{"x", i64({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8})}}), {2, 2, 2}, {1, 2, 0, 4, 5, 6, 0, 8});
}

TEST_CASE("onnx import: CumSum by hand (exclusive, reverse, axis from a constant, i64)") {
  auto cumsum = [](Tensor x, int64_t ax, int exclusive, int reverse) {
    return run("CumSum", {{"x", std::move(x)}},
               [=](onnx::NodeProto* n) {
                 int_attr(n, "exclusive", exclusive);
                 int_attr(n, "reverse", reverse);
               },
               {{"axis", {ax}}});
  };
  const std::vector<float> v = {1, 2, 3, 4, 5};
  check_f32(cumsum(Tensor::f32({5}, v), 0, 0, 0), {5}, {1, 3, 6, 10, 15});
  check_f32(cumsum(Tensor::f32({5}, v), 0, 1, 0), {5}, {0, 1, 3, 6, 10});
  check_f32(cumsum(Tensor::f32({5}, v), 0, 0, 1), {5}, {15, 14, 12, 9, 5});
  check_f32(cumsum(Tensor::f32({5}, v), -1, 1, 1), {5}, {14, 12, 9, 5, 0});
  check_i64(cumsum(i64({2, 3}, {1, 2, 3, 4, 5, 6}), 1, 0, 0), {2, 3}, {1, 3, 6, 4, 9, 15});
  check_i64(cumsum(i64({2, 3}, {1, 2, 3, 4, 5, 6}), 0, 0, 0), {2, 3}, {1, 2, 3, 5, 7, 9});
}

TEST_CASE("onnx import: DepthToSpace (DCR, CRD) and SpaceToDepth by hand") {
  // X [1, 8, 1, 1] = 0..7, blocksize 2: DCR takes channel (bh * 2 + bw) * 2 + c, CRD c * 4 + bh * 2 + bw.
  std::vector<float> ch(8);
  for (int i = 0; i < 8; ++i) ch[static_cast<size_t>(i)] = static_cast<float>(i);
  auto d2s = [&](const char* mode) {
    return run("DepthToSpace", {{"x", Tensor::f32({1, 8, 1, 1}, ch)}}, [mode](onnx::NodeProto* n) {
      int_attr(n, "blocksize", 2);
      str_attr(n, "mode", mode);
    });
  };
  check_f32(d2s("DCR"), {1, 2, 2, 2}, {0, 2, 4, 6, 1, 3, 5, 7});
  check_f32(d2s("CRD"), {1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // X [1, 2, 2, 4] (two channels of [[0..3], [4..7]] and [[8..11], [12..15]]), blocksize 2: output
  // channel (bh * 2 + bw) * 2 + c at block (h', w') holds X[c, 2h' + bh, 2w' + bw].
  std::vector<float> sp(16);
  for (int i = 0; i < 16; ++i) sp[static_cast<size_t>(i)] = static_cast<float>(i);
  check_f32(run("SpaceToDepth", {{"x", Tensor::f32({1, 2, 2, 4}, sp)}},
                [](onnx::NodeProto* n) { int_attr(n, "blocksize", 2); }),
            {1, 8, 1, 2}, {0, 2, 8, 10, 1, 3, 9, 11, 4, 6, 12, 14, 5, 7, 13, 15});
  auto bad = try_run("DepthToSpace", {{"x", Tensor::f32({1, 6, 1, 1}, std::vector<float>(6, 0.f))}},
                     [](onnx::NodeProto* n) { int_attr(n, "blocksize", 2); });
  REQUIRE_FALSE(bad.ok());
  CHECK_MESSAGE(has(bad.status().message(), "channels 6 are not a multiple of blocksize^2 4"), bad.status().message());
}

TEST_CASE("onnx import: Sum and Mean by hand (one, two and three inputs, broadcasting), CastLike") {
  auto a = [] { return Tensor::f32({3}, {1, 2, 3}); };
  auto b = [] { return Tensor::f32({2, 1}, {10, 20}); };
  auto c = [] { return Tensor::f32({1}, {100}); };
  check_f32(run("Sum", {{"a", a()}}), {3}, {1, 2, 3});
  check_f32(run("Sum", {{"a", a()}, {"b", b()}}), {2, 3}, {11, 12, 13, 21, 22, 23});
  check_f32(run("Sum", {{"a", a()}, {"b", b()}, {"c", c()}}), {2, 3}, {111, 112, 113, 121, 122, 123});
  check_f32(run("Mean", {{"a", a()}, {"b", b()}}), {2, 3}, {5.5f, 6, 6.5f, 10.5f, 11, 11.5f});
  check_f32(run("Mean", {{"a", a()}, {"b", b()}, {"c", c()}}), {2, 3},
            {37, 112.f / 3, 113.f / 3, 121.f / 3, 122.f / 3, 41});
  // CastLike to i64 truncates toward zero (as Cast); the `like` tensor only gives the dtype.
  check_i64(run("CastLike", {{"x", Tensor::f32({3}, {1.7f, -2.2f, 3.0f})}, {"like", i64({1}, {0})}}, {}, {}, 15), {3},
            {1, -2, 3});
}

TEST_CASE("onnx import: TopK by hand (largest, smallest, ties, NaN, a middle axis, opset 9's k attribute)") {
  // One TopK on x, k as a constant input (opset 11) or attribute (opset 9); returns (values, indices).
  auto topk = [](Tensor x, int64_t k, int64_t axis, int64_t largest, int64_t opset) {
    auto m = model(opset);
    auto* g = m.mutable_graph();
    add_input(g, "x", x.shape(), "", -1, elem_of(x));
    std::vector<std::string> ins = {"x"};
    if (opset >= 10) {
      add_i64(g, "k", {k});
      ins.push_back("k");
    }
    auto* n = add_node(g, "TopK", ins, {"v", "i"}, "t0");
    int_attr(n, "axis", axis);
    if (opset >= 11) int_attr(n, "largest", largest);
    if (opset < 10) int_attr(n, "k", k);
    add_output(g, "v");
    add_output(g, "i");
    SessionOptions opt;
    opt.threads = 1;
    auto s = Session::load(save(m, "topk.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", std::move(x)}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    return std::make_pair(y->at("v").clone(), y->at("i").clone());
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Row [3, 1, 3, 2, 5]: the two largest are 5 (index 4) then the first 3 (index 0).
  auto [v, i] = topk(Tensor::f32({1, 5}, {3, 1, 3, 2, 5}), 2, -1, 1, 11);
  check_f32(v, {1, 2}, {5, 3});
  check_i64(i, {1, 2}, {4, 0});
  // Smallest three: 1 (1), 2 (3), the first 3 (0).
  auto [v2, i2] = topk(Tensor::f32({1, 5}, {3, 1, 3, 2, 5}), 3, 1, 0, 11);
  check_f32(v2, {1, 3}, {1, 2, 3});
  check_i64(i2, {1, 3}, {1, 3, 0});
  // A NaN counts as the largest.
  auto [v3, i3] = topk(Tensor::f32({4}, {1, nan, 7, 2}), 2, 0, 1, 11);
  CHECK(std::isnan(v3.f32()[0]));
  CHECK(v3.f32()[1] == 7.f);
  check_i64(i3, {2}, {1, 2});
  // Axis 0 of [3, 2] (columns [4, 9, 1] and [0, 5, 5]), k 2, opset 9 (k as an attribute).
  auto [v4, i4] = topk(Tensor::f32({3, 2}, {4, 0, 9, 5, 1, 5}), 2, 0, 1, 9);
  check_f32(v4, {2, 2}, {9, 5, 4, 5});
  check_i64(i4, {2, 2}, {1, 1, 0, 2});
  // i64 data.
  auto [v5, i5] = topk(i64({3}, {-5, 10, 7}), 1, 0, 1, 11);
  check_i64(v5, {1}, {10});
  check_i64(i5, {1}, {1});
}

TEST_CASE("onnx import: a graph with no outputs and CastLike to float16 are load errors") {
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_node(g, "Relu", {"x"}, {"y"}, "r");
  auto s = Session::load(save(m, "no_outputs.onnx"), SessionOptions{});
  REQUIRE_FALSE(s.ok());
  CHECK_MESSAGE(has(s.status().message(), "no_outputs.onnx: the graph has no outputs"), s.status().message());

  auto c = model(17);
  auto* cg = c.mutable_graph();
  add_input(cg, "x", {2});
  auto* like = cg->add_initializer();
  like->set_name("like");
  like->set_data_type(onnx::TensorProto::FLOAT16);
  like->add_dims(1);
  like->set_raw_data(std::string(2, '\0'));
  add_node(cg, "CastLike", {"x", "like"}, {"y"}, "cl");
  add_output(cg, "y");
  auto cs = Session::load(save(c, "castlike_f16.onnx"), SessionOptions{});
  REQUIRE_FALSE(cs.ok());
  CHECK_MESSAGE(has(cs.status().message(), "CastLike to float16 x1 (cl)"), cs.status().message());
}

TEST_CASE("onnx import: GatherND and ScatterND by hand (ONNX's examples, batch_dims, negative indices, range error)") {
  // GatherND: data [[0, 1], [2, 3]], indices [[0, 0], [1, 1]] -> [0, 3]; [[1], [0]] -> rows 1, 0.
  const Tensor x = Tensor::f32({2, 2}, {0, 1, 2, 3});
  check_f32(run("GatherND", {{"x", x.clone()}, {"i", i64({2, 2}, {0, 0, 1, 1})}}), {2}, {0, 3});
  check_f32(run("GatherND", {{"x", x.clone()}, {"i", i64({2, 1}, {1, 0})}}), {2, 2}, {2, 3, 0, 1});
  check_f32(run("GatherND", {{"x", x.clone()}, {"i", i64({1, 2}, {-1, -2})}}), {1}, {2});
  // batch_dims 1: data [2, 2, 2], indices [[1], [0]] -> batch 0 row 1, batch 1 row 0.
  check_f32(run("GatherND", {{"x", Tensor::f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7})}, {"i", i64({2, 1}, {1, 0})}},
                [](onnx::NodeProto* n) { int_attr(n, "batch_dims", 1); }),
            {2, 2}, {2, 3, 4, 5});
  auto bad = try_run("GatherND", {{"x", x.clone()}, {"i", i64({1, 2}, {0, 2})}});
  REQUIRE_FALSE(bad.ok());
  CHECK_MESSAGE(
      has(bad.status().message(), "node 'n0' (GatherND): index 2 at position 1 of 'i' is out of range [-2, 2)"),
      bad.status().message());
  // ScatterND: ONNX's 1-D example, data [1..8], indices [[4], [3], [1], [7]], updates [9, 10, 11, 12].
  static const std::vector<float> kUpdates = {9, 10, 11, 12};
  auto nd = [](const char* reduction, const std::vector<int64_t>& idx) {
    return run(
        "ScatterND",
        {{"x", Tensor::f32({8}, {1, 2, 3, 4, 5, 6, 7, 8})},
         {"i", i64({static_cast<int64_t>(idx.size()), 1}, idx)},
         {"u", Tensor::f32({static_cast<int64_t>(idx.size())},
                           std::vector<float>(kUpdates.begin(), kUpdates.begin() + static_cast<long>(idx.size())))}},
        [reduction](onnx::NodeProto* n) {
          if (reduction) str_attr(n, "reduction", reduction);
        },
        {}, 18);
  };
  check_f32(nd(nullptr, {4, 3, 1, 7}), {8}, {1, 11, 3, 10, 9, 6, 7, 12});
  check_f32(nd("add", {1, 1}), {8}, {1, 2 + 9 + 10, 3, 4, 5, 6, 7, 8});  // duplicates combine in order
  check_f32(nd("mul", {-1, -1}), {8}, {1, 2, 3, 4, 5, 6, 7, 8 * 9 * 10});
  check_f32(nd("max", {0, 0}), {8}, {10, 2, 3, 4, 5, 6, 7, 8});
  // Slices: data [2, 3], indices [[1]], updates [[7, 8, 9]] replace row 1.
  check_f32(run("ScatterND", {{"x", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})},
                              {"i", i64({1, 1}, {1})},
                              {"u", Tensor::f32({1, 3}, {7, 8, 9})}}),
            {2, 3}, {1, 2, 3, 7, 8, 9});
}

TEST_CASE("onnx import: OneHot by hand (negative and outside indices, axis, float indices, i64 values)") {
  auto onehot = [](Tensor idx, int64_t depth, Tensor values, int64_t axis) {
    auto m = model(11);
    auto* g = m.mutable_graph();
    add_input(g, "i", idx.shape(), "", -1, elem_of(idx));
    add_i64(g, "depth", {depth});
    add_input(g, "v", values.shape(), "", -1, elem_of(values));
    auto* n = add_node(g, "OneHot", {"i", "depth", "v"}, {"y"}, "oh");
    int_attr(n, "axis", axis);
    add_output(g, "y");
    SessionOptions opt;
    opt.threads = 1;
    auto s = Session::load(save(m, "onehot.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    TensorMap in;
    in.emplace("i", std::move(idx));
    in.emplace("v", std::move(values));
    auto y = (*s)->run(in);
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    return y->at("y").clone();
  };
  // Indices [0, 2, -1, 5], depth 3: -1 is 2; 5 is outside, all off.
  check_f32(onehot(i64({4}, {0, 2, -1, 5}), 3, Tensor::f32({2}, {0, 1}), -1), {4, 3},
            {1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0});
  check_f32(onehot(i64({4}, {0, 2, -1, 5}), 3, Tensor::f32({2}, {0, 1}), 0), {3, 4},
            {1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0});
  // Float indices truncate toward zero (1.7 -> 1, -0.5 -> 0); values [-1, 7] as i64.
  check_i64(onehot(Tensor::f32({2}, {1.7f, -0.5f}), 3, i64({2}, {-1, 7}), -1), {2, 3}, {-1, 7, -1, 7, -1, -1});
}
