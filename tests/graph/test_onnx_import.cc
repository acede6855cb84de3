// The ONNX import on models built here with the ONNX protobuf API: values by hand, the folding
// of exporters' shape chains, symbolic dims, and every error a crafted or broken file gives
// (each naming the file, node, tensor or input, never a crash). The ops' values by hand are in
// test_onnx_ops.cc.
#include <limits>

#include "tests/graph/onnx_test_util.h"

using namespace fusert;
using namespace fusert::onnx_test;

TEST_CASE("onnx import: Gemm + Add + Relu with raw and typed initializers, values by hand") {
  auto m = model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3});
  add_f32(g, "w", {2, 3}, {1, 2, 3, -1, 0, 1});         // raw_data
  add_f32(g, "b", {2}, {0.5f, -10.0f}, /*raw=*/false);  // float_data
  auto* gemm = add_node(g, "Gemm", {"x", "w", "b"}, {"h"}, "fc");
  auto* a = gemm->add_attribute();
  a->set_name("transB");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  add_node(g, "Relu", {"h"}, {"y"});
  add_output(g, "y");
  for (const char* fusion : {"none", "all"}) {
    SessionOptions opt;
    opt.threads = 1;
    opt.fusion = fusion;
    auto s = Session::load(save(m, "gemm.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({1, 3}, {1, 1, 1})}});
    REQUIRE(y.ok());
    // [1+2+3+0.5, -1+0+1-10] = [6.5, -10] -> relu -> [6.5, 0]
    CHECK(y->at("y").f32()[0] == doctest::Approx(6.5));
    CHECK(y->at("y").f32()[1] == 0.0f);
  }
}

TEST_CASE("onnx import: Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains fold to constants") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3, 4});
  add_i64(g, "zero", {0});
  add_i64(g, "minus_one", {-1});
  add_node(g, "Shape", {"x"}, {"s"});
  add_node(g, "Gather", {"s", "zero"}, {"n"});  // [2]
  add_node(g, "Concat", {"n", "minus_one"}, {"target"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  add_node(g, "Reshape", {"x", "target"}, {"y"});
  add_output(g, "y");
  auto spec = load_onnx(save(m, "chain.onnx"));
  REQUIRE_MESSAGE(spec.ok(), spec.status().to_string());
  CHECK(spec->graph.nodes.size() == 1);  // only the Reshape is left
  CHECK(spec->graph.value(spec->graph.outputs[0]).shape == Shape{2, 12});
}

TEST_CASE("onnx import: symbolic dims bind from input_shapes, a leading one defaults to 1") {
  auto m = model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 3, 0, 8}, "height", 2);
  add_node(g, "Relu", {"x"}, {"y"});
  add_output(g, "y");
  const std::string p = save(m, "sym.onnx");
  auto r = load_onnx(p);
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidArgument);
  CHECK(has(r.status().message(), "input 'x' dimension 2 is symbolic ('height'); bind it with --shape x="));
  auto ok = load_onnx(p, {{"x", {1, 3, 5, 8}}});
  REQUIRE(ok.ok());
  CHECK(ok->graph.value(ok->graph.outputs[0]).shape == Shape{1, 3, 5, 8});
  auto rank = load_onnx(p, {{"x", {3, 5, 8}}});
  REQUIRE(!rank.ok());
  CHECK(has(rank.status().message(), "--shape x has rank 3, the model's input has rank 4"));
  auto fixed = load_onnx(p, {{"x", {1, 4, 5, 8}}});
  REQUIRE(!fixed.ok());
  CHECK(has(fixed.status().message(), "dimension 1 is fixed at 3"));

  auto b = model();
  add_input(b.mutable_graph(), "x", {0, 4}, "batch", 0);
  add_node(b.mutable_graph(), "Relu", {"x"}, {"y"});
  add_output(b.mutable_graph(), "y");
  auto batch = load_onnx(save(b, "batch.onnx"));
  REQUIRE(batch.ok());
  CHECK(batch->graph.value(batch->graph.inputs[0]).shape == Shape{1, 4});
}

TEST_CASE("onnx import: one error lists every unsupported op type and attribute") {
  auto m = model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 4});
  add_node(g, "Foo", {"x"}, {"a"}, "foo1");
  add_node(g, "Foo", {"a"}, {"b"}, "foo2");
  add_node(g, "Bar", {"b"}, {"c"}, "bar1");
  auto* r = add_node(g, "Relu", {"c"}, {"y"}, "relu1");
  auto* at = r->add_attribute();
  at->set_name("zzz");
  at->set_type(onnx::AttributeProto::INT);
  add_output(g, "y");
  auto s = load_onnx(save(m, "unsupported.onnx"));
  REQUIRE(!s.ok());
  CHECK(s.status().code() == StatusCode::kUnsupported);
  const std::string msg = s.status().message();
  CHECK(has(msg, "unsupported.onnx: unsupported by fusert:"));
  CHECK(has(msg, "Foo x2 (foo1, foo2)"));
  CHECK(has(msg, "Bar x1 (bar1)"));
  CHECK(has(msg, "Relu.zzz x1 (relu1)"));
}

TEST_CASE("onnx import: broken files are errors naming the file or the tensor") {
  const fs::path d = scratch_dir();
  {
    std::ofstream f(d / "garbage.onnx", std::ios::binary);
    f << "this is not a protobuf \xff\xff\xff\xff\xff";
  }
  auto garbage = load_onnx((d / "garbage.onnx").string());
  REQUIRE(!garbage.ok());
  CHECK(garbage.status().code() == StatusCode::kParseError);
  CHECK(has(garbage.status().message(), "garbage.onnx: not an ONNX model"));

  auto m = model();
  auto* g = m.mutable_graph();
  add_input(g, "x", {2});
  add_f32(g, "w", {2}, {1, 2});
  g->mutable_initializer(0)->set_raw_data(std::string(7, '\0'));  // 7 bytes for 2 floats
  add_node(g, "Add", {"x", "w"}, {"y"});
  add_output(g, "y");
  auto bad = load_onnx(save(m, "short.onnx"));
  REQUIRE(!bad.ok());
  CHECK(has(bad.status().message(), "initializer 'w': 7 bytes of data for [2] float (8 expected)"));

  // Truncated: half of a valid model.
  const std::string whole = m.SerializeAsString();
  add_f32(g, "w2", {64}, std::vector<float>(64, 1.0f));
  const std::string big = m.SerializeAsString();
  {
    std::ofstream f(d / "truncated.onnx", std::ios::binary);
    f << big.substr(0, big.size() - 100);
  }
  auto trunc = load_onnx((d / "truncated.onnx").string());
  REQUIRE(!trunc.ok());
  (void)whole;

  // External data outside the model's directory, and missing.
  auto e = model();
  add_input(e.mutable_graph(), "x", {2});
  add_f32(e.mutable_graph(), "w", {2}, {1, 2});
  auto* t = e.mutable_graph()->mutable_initializer(0);
  t->clear_raw_data();
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("../../etc/passwd");
  add_node(e.mutable_graph(), "Add", {"x", "w"}, {"y"});
  add_output(e.mutable_graph(), "y");
  auto outside = load_onnx(save(e, "outside.onnx"));
  REQUIRE(!outside.ok());
  CHECK(has(outside.status().message(), "is outside the model's directory"));
  kv->set_value("missing.bin");
  auto missing = load_onnx(save(e, "missing.onnx"));
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(has(missing.status().message(), "initializer 'w': external data file"));
}

TEST_CASE("onnx import: Dropout is the identity only in inference mode") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {4});
  auto* t = g->add_initializer();
  t->set_name("train");
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(1);
  add_f32(g, "ratio", {}, {0.5f});
  add_node(g, "Dropout", {"x", "ratio", "train"}, {"y"}, "drop");
  add_output(g, "y");
  auto s = load_onnx(save(m, "dropout.onnx"));
  REQUIRE(!s.ok());
  CHECK(s.status().code() == StatusCode::kUnsupported);
  CHECK(has(s.status().message(), "Dropout in training mode"));
  t->set_int32_data(0, 0);
  auto ok = load_onnx(save(m, "dropout_eval.onnx"));
  REQUIRE_MESSAGE(ok.ok(), ok.status().to_string());
}

TEST_CASE("onnx import: ReduceMax / ReduceMin by hand, axes as attribute (13) and input (18), NaN propagates") {
  for (int64_t opset : {13, 18}) {
    for (const char* op : {"ReduceMax", "ReduceMin"}) {
      auto m = model(opset);
      auto* g = m.mutable_graph();
      add_input(g, "x", {2, 3});
      std::vector<std::string> ins = {"x"};
      if (opset == 18) {
        add_i64(g, "axes", {1});
        ins.push_back("axes");
      }
      auto* n = add_node(g, op, ins, {"y"}, "r");
      if (opset == 13) {
        auto* a = n->add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        a->add_ints(1);
      }
      auto* k = n->add_attribute();
      k->set_name("keepdims");
      k->set_type(onnx::AttributeProto::INT);
      k->set_i(0);
      add_output(g, "y");
      SessionOptions opt;
      opt.threads = 1;
      auto s = Session::load(save(m, std::string(op) + std::to_string(opset) + ".onnx"), opt);
      REQUIRE_MESSAGE(s.ok(), s.status().to_string());
      const float nan = std::numeric_limits<float>::quiet_NaN();
      auto y = (*s)->run({{"x", Tensor::f32({2, 3}, {1, 5, -3, 2, nan, 4})}});
      REQUIRE(y.ok());
      const Tensor& t = y->at("y");
      REQUIRE(t.shape() == Shape{2});
      CHECK(t.f32()[0] == (std::string(op) == "ReduceMax" ? 5.f : -3.f));
      CHECK(std::isnan(t.f32()[1]));
    }
  }
}

TEST_CASE("onnx import: a dim_param kept symbolic (--dim): any batch in range, shape chains refolded") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {0, 4}, "N", 0);
  add_i64(g, "zero", {0});
  add_i64(g, "two_two", {2, 2});
  add_node(g, "Shape", {"x"}, {"s"});
  add_node(g, "Gather", {"s", "zero"}, {"n"});  // [N]
  auto* cat = add_node(g, "Concat", {"n", "two_two"}, {"target"});
  auto* ax = cat->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(0);
  add_node(g, "Reshape", {"x", "target"}, {"r"});  // [N, 2, 2]
  add_node(g, "Relu", {"r"}, {"y"});
  add_output(g, "y");
  SessionOptions opt;
  opt.threads = 1;
  opt.dim_ranges["N"] = DimRange{1, 8, 2};
  auto s = Session::load(save(m, "dyn.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  const std::vector<TensorInfo> ins = (*s)->inputs();
  REQUIRE(ins.size() == 1);
  CHECK(ins[0].dims[0].symbol == "N");
  CHECK(ins[0].dims[0].min == 1);
  CHECK(ins[0].dims[0].max == 8);
  for (int64_t n : {1, 2, 5, 8}) {
    std::vector<float> v(static_cast<size_t>(n * 4));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * (i % 3 == 0 ? -1.f : 1.f);
    auto y = (*s)->run({{"x", Tensor::f32({n, 4}, v)}});
    REQUIRE_MESSAGE(y.ok(), y.status().to_string());
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{n, 2, 2});
    for (size_t i = 0; i < v.size(); ++i) CHECK(t.f32()[i] == std::max(v[i], 0.f));
  }
  auto out = (*s)->run({{"x", Tensor(DType::kF32, {9, 4})}});
  REQUIRE(!out.ok());
  CHECK(has(out.status().message(), "1..8"));

  SessionOptions bad = opt;
  bad.dim_ranges = {{"M", DimRange{1, 8, 1}}};
  auto unknown = Session::load(save(m, "dyn.onnx"), bad);
  REQUIRE(!unknown.ok());
  CHECK(has(unknown.status().message(), "--dim M: no input dimension of the model is named so"));
  bad.dim_ranges = {{"N", DimRange{4, 8, 2}}};
  auto range = Session::load(save(m, "dyn.onnx"), bad);
  REQUIRE(!range.ok());
  CHECK(has(range.status().message(), "expected 1 <= min <= opt <= max"));
}

TEST_CASE("onnx import: crafted sizes are errors, never overflows (found by mutating models under UBSan)") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_i64(g, "shape", {int64_t{1} << 40, int64_t{1} << 40});
  add_node(g, "Reshape", {"x", "shape"}, {"y"});
  add_output(g, "y");
  auto r = load_onnx(save(m, "huge_reshape.onnx"));
  REQUIRE(!r.ok());
  CHECK(has(r.status().message(), "exceeds the largest tensor fusert allocates"));

  auto p = model(13);
  auto* pg = p.mutable_graph();
  add_input(pg, "x", {1, 3});
  add_i64(pg, "pads", {0, int64_t{1} << 62, 0, int64_t{1} << 62});
  add_node(pg, "Pad", {"x", "pads"}, {"y"});
  add_output(pg, "y");
  auto pr = load_onnx(save(p, "huge_pad.onnx"));
  REQUIRE(!pr.ok());
  CHECK(has(pr.status().message(), "too large"));
}
