// 1-D Conv, ConvTranspose, MaxPool and AveragePool ([N, C, L] inputs, imported as the 2-D ops on
// [N, C, 1, L]) against values worked out by hand: pads, strides, dilations, groups, bias,
// count_include_pad, a Relu after the Conv (fused or not), and an open length L run at two
// sizes on one session.
#include <functional>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

namespace {

using Attrs = std::function<void(onnx::NodeProto*)>;

// One `op` node on x [N, C, L] (L symbolic "len" when `open`), weight `w` of shape `ws` (none
// when empty) and bias `b`, then a Relu when `relu`; returns the session.
std::unique_ptr<Session> load(const std::string& op, const Shape& xs, const Shape& ws, const std::vector<float>& w,
                              const std::vector<float>& b, const Attrs& attrs, bool relu = false,
                              const char* fusion = "all", bool open = false) {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", xs, open ? "len" : "", open ? 2 : -1);
  std::vector<std::string> ins = {"x"};
  if (!ws.empty()) {
    add_f32(g, "w", ws, w);
    ins.push_back("w");
  }
  if (!b.empty()) {
    add_f32(g, "b", {static_cast<int64_t>(b.size())}, b);
    ins.push_back("b");
  }
  auto* n = add_node(g, op, ins, {relu ? "t" : "y"}, "n0");
  if (attrs) attrs(n);
  if (relu) add_node(g, "Relu", {"t"}, {"y"}, "act");
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  auto s = Session::load(save(m, op + "1d.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(*s);
}

Tensor run(Session& s, const Shape& xs, const std::vector<float>& x) {
  auto y = s.run({{"x", Tensor::f32(xs, x)}});
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at("y").clone();
}

Tensor run1(const std::string& op, const Shape& xs, const std::vector<float>& x, const Shape& ws,
            const std::vector<float>& w, const std::vector<float>& b, const Attrs& attrs, bool relu = false,
            const char* fusion = "all") {
  return run(*load(op, xs, ws, w, b, attrs, relu, fusion), xs, x);
}

Attrs ints(std::vector<std::pair<const char*, std::vector<int64_t>>> kv, int64_t group = 0) {
  return [kv, group](onnx::NodeProto* n) {
    for (const auto& [k, v] : kv) ints_attr(n, k, v);
    if (group) int_attr(n, "group", group);
  };
}

}  // namespace

TEST_CASE("onnx import: 1-D Conv by hand (pads, stride, dilation, groups, bias, a fused Relu)") {
  const std::vector<float> x = {1, 2, 3, 4, 5};
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    // W [1, 0, -1], pads 1: y[i] = x[i-1] - x[i+1] (zeros outside), + bias 0.5.
    check_f32(run1("Conv", {1, 1, 5}, x, {1, 1, 3}, {1, 0, -1}, {0.5f}, ints({{"pads", {1, 1}}}), false, fusion),
              {1, 1, 5}, {-1.5f, -1.5f, -1.5f, -1.5f, 4.5f});
    // The same then Relu (fused into the conv with fusion all).
    check_f32(run1("Conv", {1, 1, 5}, x, {1, 1, 3}, {1, 0, -1}, {0.5f}, ints({{"pads", {1, 1}}}), true, fusion),
              {1, 1, 5}, {0, 0, 0, 0, 4.5f});
    // Stride 2, no pads: x[2j] - x[2j + 2].
    check_f32(run1("Conv", {1, 1, 5}, x, {1, 1, 3}, {1, 0, -1}, {}, ints({{"strides", {2}}}), false, fusion), {1, 1, 2},
              {-2, -2});
    // Dilation 2, W [1, 1]: x[i] + x[i + 2].
    check_f32(run1("Conv", {1, 1, 5}, x, {1, 1, 2}, {1, 1}, {}, ints({{"dilations", {2}}}), false, fusion), {1, 1, 3},
              {4, 6, 8});
    // Two groups of one channel: 2 * [1, 2, 3] and 3 * [4, 5, 6].
    check_f32(run1("Conv", {1, 2, 3}, {1, 2, 3, 4, 5, 6}, {2, 1, 1}, {2, 3}, {}, ints({}, 2), false, fusion), {1, 2, 3},
              {2, 4, 6, 12, 15, 18});
  }
}

TEST_CASE("onnx import: 1-D MaxPool, AveragePool and ConvTranspose by hand") {
  const std::vector<float> x = {1, 3, 2, 5, 4};
  check_f32(run1("MaxPool", {1, 1, 5}, x, {}, {}, {}, ints({{"kernel_shape", {2}}, {"strides", {2}}})), {1, 1, 2},
            {3, 5});
  check_f32(run1("MaxPool", {1, 1, 5}, x, {}, {}, {}, ints({{"kernel_shape", {3}}, {"pads", {1, 1}}})), {1, 1, 5},
            {3, 3, 5, 5, 5});
  check_f32(run1("AveragePool", {1, 1, 5}, x, {}, {}, {}, ints({{"kernel_shape", {2}}})), {1, 1, 4},
            {2, 2.5f, 3.5f, 4.5f});
  // count_include_pad 0 (the default): the padded window at the start averages x[0] alone.
  check_f32(run1("AveragePool", {1, 1, 5}, x, {}, {}, {}, ints({{"kernel_shape", {2}}, {"pads", {1, 0}}})), {1, 1, 5},
            {1, 2, 2.5f, 3.5f, 4.5f});
  // ConvTranspose, W [1, 1]: stride 2 repeats each input twice; stride 1 sums neighbours.
  check_f32(run1("ConvTranspose", {1, 1, 3}, {1, 2, 3}, {1, 1, 2}, {1, 1}, {}, ints({{"strides", {2}}})), {1, 1, 6},
            {1, 1, 2, 2, 3, 3});
  check_f32(run1("ConvTranspose", {1, 1, 3}, {1, 2, 3}, {1, 1, 2}, {1, 1}, {}, ints({})), {1, 1, 4}, {1, 3, 5, 3});
}

TEST_CASE("onnx import: a 1-D Conv over an open length runs at two lengths on one session") {
  auto s = load("Conv", {1, 1, 5}, {1, 1, 3}, {1, 0, -1}, {}, ints({{"pads", {1, 1}}}), true, "all", true);
  check_f32(run(*s, {1, 1, 5}, {5, 4, 3, 2, 1}), {1, 1, 5}, {0, 2, 2, 2, 2});
  check_f32(run(*s, {1, 1, 7}, {1, 2, 3, 4, 5, 6, 7}), {1, 1, 7}, {0, 0, 0, 0, 0, 0, 6});
}

TEST_CASE("onnx import: 1-D ops with 2-D attributes, a weight of another rank, pool pads >= kernel are errors") {
  auto err = [](const std::string& op, const Shape& ws, const Attrs& attrs) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 2, 6});
    std::vector<std::string> ins = {"x"};
    if (!ws.empty()) {
      add_f32(g, "w", ws, std::vector<float>(static_cast<size_t>(shape_numel(ws)), 1.f));
      ins.push_back("w");
    }
    auto* n = add_node(g, op, ins, {"y"}, "n0");
    attrs(n);
    add_output(g, "y");
    auto s = Session::load(save(m, "bad1d.onnx"), SessionOptions{});
    REQUIRE_FALSE(s.ok());
    return s.status().message();
  };
  CHECK(has(err("Conv", {3, 2, 3}, ints({{"pads", {1, 1, 1, 1}}})),
            "'n0' (Conv)): pads has 4 values; a 1-D op (input [N, C, L]) takes 2"));
  CHECK(has(err("Conv", {3, 2, 3}, ints({{"strides", {1, 3}}})), "strides has 2 values"));
  CHECK(has(err("Conv", {3, 2}, ints({})), "weight 'w' is [3, 2]; a 1-D Conv (input [N, C, L]) takes a rank-3"));
  CHECK(has(err("ConvTranspose", {2, 3, 1, 3}, ints({})), "weight 'w' is [2, 3, 1, 3]"));
  CHECK(has(err("MaxPool", {}, ints({{"kernel_shape", {2}}, {"pads", {2, 0}}})),
            "pads [0, 2, 0, 0] must be smaller than kernel_shape [1, 2]"));
  CHECK(has(err("Conv", {3, 2, 3}, ints({{"dilations", {1 << 20}}})), "dilations and pads above 65536"));
}
