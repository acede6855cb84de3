// The ONNX import on models built here with the ONNX protobuf API: values by hand, the folding
// of exporters' shape chains, symbolic dims, and every error a crafted or broken file gives
// (each naming the file, node, tensor or input, never a crash).
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "graph/onnx/onnx_import.h"
#include "runtime/session.h"

using namespace fusert;
namespace fs = std::filesystem;

namespace {

fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("fusert_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

onnx::ModelProto model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("t");
  return m;
}

void add_input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, const std::string& sym = "",
               int sym_at = -1, int elem = onnx::TensorProto::FLOAT) {
  auto* v = g->add_input();
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = t->mutable_shape()->add_dim();
    if (static_cast<int>(i) == sym_at) {
      d->set_dim_param(sym);
    } else {
      d->set_dim_value(dims[i]);
    }
  }
}

void add_output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

void add_f32(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, std::vector<float> v,
             bool raw = true) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  if (raw) {
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
  } else {
    for (float x : v) t->add_float_data(x);
  }
}

void add_i64(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

std::string save(const onnx::ModelProto& m, const std::string& name) {
  const std::string p = (scratch_dir() / name).string();
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

bool has(const std::string& s, const std::string& f) { return s.find(f) != std::string::npos; }

}  // namespace

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

TEST_CASE("onnx import: Expand and Pad (constant, reflect, edge) by hand") {
  SessionOptions opt;
  opt.threads = 1;
  {  // Expand [3, 1] to [2, 3, 4]
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {3, 1});
    add_i64(g, "shape", {2, 1, 4});
    add_node(g, "Expand", {"x", "shape"}, {"y"});
    add_output(g, "y");
    auto s = Session::load(save(m, "expand.onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({3, 1}, {1, 2, 3})}});
    REQUIRE(y.ok());
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{2, 3, 4});
    for (int64_t i = 0; i < 24; ++i) CHECK(t.f32()[i] == static_cast<float>((i / 4) % 3 + 1));
  }
  // Pad [1, 3] by 2 before and 1 after on the last dim.
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"constant", {7, 7, 1, 2, 3, 7}}, {"reflect", {3, 2, 1, 2, 3, 2}}, {"edge", {1, 1, 1, 2, 3, 3}}};
  for (const auto& [mode, want] : cases) {
    auto m = model(13);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 3});
    add_i64(g, "pads", {0, 2, 0, 1});
    add_f32(g, "value", {}, {7.f});
    auto* n = add_node(g, "Pad", {"x", "pads", "value"}, {"y"}, "pad");
    auto* a = n->add_attribute();
    a->set_name("mode");
    a->set_type(onnx::AttributeProto::STRING);
    a->set_s(mode);
    add_output(g, "y");
    auto s = Session::load(save(m, "pad_" + mode + ".onnx"), opt);
    REQUIRE_MESSAGE(s.ok(), s.status().to_string());
    auto y = (*s)->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
    REQUIRE(y.ok());
    const Tensor& t = y->at("y");
    REQUIRE(t.shape() == Shape{1, 6});
    for (size_t i = 0; i < 6; ++i) CHECK(t.f32()[i] == want[i]);
  }
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

TEST_CASE("onnx import: Tile by hand; ArgMax with a NaN (numpy: the NaN's index)") {
  SessionOptions opt;
  opt.threads = 1;
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 2});
  add_i64(g, "reps", {1, 2});
  add_node(g, "Tile", {"x", "reps"}, {"y"});
  add_output(g, "y");
  auto s = Session::load(save(m, "tile.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run({{"x", Tensor::f32({2, 2}, {1, 2, 3, 4})}});
  REQUIRE(y.ok());
  const std::vector<float> want = {1, 2, 1, 2, 3, 4, 3, 4};
  REQUIRE(y->at("y").shape() == Shape{2, 4});
  for (size_t i = 0; i < want.size(); ++i) CHECK(y->at("y").f32()[i] == want[i]);

  auto a = model(13);
  add_input(a.mutable_graph(), "x", {2, 3});
  auto* n = add_node(a.mutable_graph(), "ArgMax", {"x"}, {"i"});
  auto* ax = n->add_attribute();
  ax->set_name("axis");
  ax->set_type(onnx::AttributeProto::INT);
  ax->set_i(1);
  add_output(a.mutable_graph(), "i");
  auto sa = Session::load(save(a, "argmax.onnx"), opt);
  REQUIRE_MESSAGE(sa.ok(), sa.status().to_string());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto r = (*sa)->run({{"x", Tensor::f32({2, 3}, {1, 9, 3, 4, nan, 8})}});
  REQUIRE(r.ok());
  const Tensor& t = r->at("i");
  REQUIRE(t.dtype() == DType::kI64);
  REQUIRE(t.shape() == Shape{2, 1});
  CHECK(t.i64()[0] == 1);
  CHECK(t.i64()[1] == 1);
}

// ---- the ops ONNX exports bring: comparisons, logic, extrema, PRelu, Resize, ConvTranspose,
// ConstantOfShape / Range; values by hand.
namespace {

void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
void ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void str_attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// Loads `m`, runs it on `in`, returns output `out`.
Tensor run_model(const onnx::ModelProto& m, const std::string& file, const TensorMap& in, const std::string& out) {
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, file), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at(out);
}

void check_f32(const Tensor& t, const Shape& shape, const std::vector<float>& want) {
  REQUIRE(t.dtype() == DType::kF32);
  REQUIRE(t.shape() == shape);
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      CHECK_MESSAGE(std::isnan(t.f32()[i]), "element " << i);
    else
      CHECK_MESSAGE(t.f32()[i] == doctest::Approx(want[i]).epsilon(1e-6), "element " << i);
  }
}

}  // namespace

TEST_CASE("onnx import: Less/Greater/Equal/Not/And with broadcasting and NaN feed a Where at run time") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_input(g, "t", {3});
  add_node(g, "Less", {"x", "t"}, {"lt"});
  add_node(g, "Greater", {"x", "t"}, {"gt"});
  add_node(g, "Equal", {"x", "t"}, {"eq"});
  add_node(g, "Or", {"lt", "gt"}, {"ne"});
  add_node(g, "Not", {"ne"}, {"not_ne"});  // == x == t, except NaN: neither less, greater nor equal
  add_node(g, "And", {"not_ne", "eq"}, {"both"});
  add_node(g, "Where", {"lt", "t", "x"}, {"y"});  // max(x, t) where comparable, else x
  add_output(g, "y");
  add_output(g, "not_ne");
  add_output(g, "both");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "compare.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", Tensor::f32({2, 3}, {1, 5, nan, 2, 2, 7})}, {"t", Tensor::f32({3}, {2, 2, 2})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("y"), {2, 3}, {2, 5, nan, 2, 2, 7});
  const Tensor& nn = r->at("not_ne");
  const Tensor& both = r->at("both");
  REQUIRE(nn.dtype() == DType::kBool);
  const std::vector<int> want_nn = {0, 0, 1, 1, 1, 0}, want_both = {0, 0, 0, 1, 1, 0};
  for (size_t i = 0; i < 6; ++i) {
    CHECK_MESSAGE(static_cast<const uint8_t*>(nn.raw())[i] == want_nn[i], "not_ne " << i);
    CHECK_MESSAGE(static_cast<const uint8_t*>(both.raw())[i] == want_both[i], "both " << i);
  }
}

TEST_CASE("onnx import: Max/Min of three broadcast inputs, NaN wins; ArgMin with a NaN") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "a", {1, 3});
  add_input(g, "b", {1});
  add_input(g, "c", {2, 1});
  add_node(g, "Max", {"a", "b", "c"}, {"mx"});
  add_node(g, "Min", {"a", "b", "c"}, {"mn"});
  add_output(g, "mx");
  add_output(g, "mn");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "extrema.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run(
      {{"a", Tensor::f32({1, 3}, {1, nan, 3})}, {"b", Tensor::f32({1}, {2})}, {"c", Tensor::f32({2, 1}, {0, 5})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("mx"), {2, 3}, {2, nan, 3, 5, nan, 5});
  check_f32(r->at("mn"), {2, 3}, {0, nan, 0, 1, nan, 2});

  auto a = model(13);
  add_input(a.mutable_graph(), "x", {2, 3});
  int_attr(add_node(a.mutable_graph(), "ArgMin", {"x"}, {"i"}), "axis", 1);
  add_output(a.mutable_graph(), "i");
  const Tensor t = run_model(a, "argmin.onnx", {{"x", Tensor::f32({2, 3}, {4, 1, 3, 4, nan, -8})}}, "i");
  REQUIRE(t.dtype() == DType::kI64);
  CHECK(t.i64()[0] == 1);
  CHECK(t.i64()[1] == 1);
}

TEST_CASE("onnx import: PRelu per channel, opset 9 ([C,1,1] slope) and opset 6 ([C] slope)") {
  for (int64_t opset : {6, 9}) {
    auto m = model(opset);
    auto* g = m.mutable_graph();
    add_input(g, "x", {1, 2, 1, 2});
    if (opset < 7)
      add_f32(g, "slope", {2}, {0.5f, -2.0f});
    else
      add_f32(g, "slope", {2, 1, 1}, {0.5f, -2.0f});
    add_node(g, "PRelu", {"x", "slope"}, {"y"});
    add_output(g, "y");
    const Tensor y = run_model(m, "prelu" + std::to_string(opset) + ".onnx",
                               {{"x", Tensor::f32({1, 2, 1, 2}, {-4, 3, -1, 0})}}, "y");
    check_f32(y, {1, 2, 1, 2}, {-2, 3, 2, 0});
  }
}

TEST_CASE("onnx import: Resize nearest (asymmetric) and linear (half_pixel, PyTorch's bilinear) by hand") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "scales", {4}, {1, 1, 2, 2});
  auto* n = add_node(g, "Resize", {"x", "", "scales"}, {"y"});
  str_attr(n, "coordinate_transformation_mode", "asymmetric");
  str_attr(n, "nearest_mode", "floor");
  add_output(g, "y");
  check_f32(run_model(m, "resize_nearest.onnx", {{"x", Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4})}}, "y"), {1, 1, 4, 4},
            {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  // Width 2 -> 4 by sizes: x_orig = (o + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, clamped to [0, 1]:
  // 1, 1.5, 2.5, 3 (torch.nn.functional.interpolate(mode="bilinear", align_corners=False)).
  auto l = model(13);
  auto* lg = l.mutable_graph();
  add_input(lg, "x", {1, 1, 1, 2});
  add_i64(lg, "sizes", {1, 1, 1, 4});
  str_attr(add_node(lg, "Resize", {"x", "", "", "sizes"}, {"y"}), "mode", "linear");
  add_output(lg, "y");
  check_f32(run_model(l, "resize_linear.onnx", {{"x", Tensor::f32({1, 1, 1, 2}, {1, 3})}}, "y"), {1, 1, 1, 4},
            {1, 1.5f, 2.5f, 3});

  // Upsample (opset 9): nearest, asymmetric, floor.
  auto u = model(9);
  auto* ug = u.mutable_graph();
  add_input(ug, "x", {1, 1, 1, 2});
  add_f32(ug, "scales", {4}, {1, 1, 1, 3});
  add_node(ug, "Upsample", {"x", "scales"}, {"y"});
  add_output(ug, "y");
  check_f32(run_model(u, "upsample.onnx", {{"x", Tensor::f32({1, 1, 1, 2}, {7, 9})}}, "y"), {1, 1, 1, 6},
            {7, 7, 7, 9, 9, 9});

  // Scales computed at run time: a clear kUnsupported naming the node.
  auto d = model(13);
  auto* dg = d.mutable_graph();
  add_input(dg, "x", {1, 1, 2, 2});
  add_input(dg, "s", {4});
  add_node(dg, "Resize", {"x", "", "s"}, {"y"}, "up");
  add_output(dg, "y");
  auto r = load_onnx(save(d, "resize_dynamic.onnx"));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(has(r.status().message(), "'up'"));
  CHECK(has(r.status().message(), "scales"));
}

TEST_CASE("onnx import: ConvTranspose by hand (stride 2, stride 1 with pads and bias, groups)") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 2, 2});
  add_f32(g, "w", {1, 1, 2, 2}, {1, 1, 1, 1});
  ints_attr(add_node(g, "ConvTranspose", {"x", "w"}, {"y"}), "strides", {2, 2});
  add_output(g, "y");
  const Tensor x = Tensor::f32({1, 1, 2, 2}, {1, 2, 3, 4});
  check_f32(run_model(m, "convt_s2.onnx", {{"x", x}}, "y"), {1, 1, 4, 4},
            {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});

  // Stride 1: every 2x2 window sums into a 3x3 map: [[1,3,2],[4,10,6],[3,7,4]]; pads 1 keep the
  // centre, + bias 0.5.
  auto p = model(13);
  auto* pg = p.mutable_graph();
  add_input(pg, "x", {1, 1, 2, 2});
  add_f32(pg, "w", {1, 1, 2, 2}, {1, 1, 1, 1});
  add_f32(pg, "b", {1}, {0.5f});
  add_node(pg, "ConvTranspose", {"x", "w", "b"}, {"full"});
  add_f32(pg, "w1", {1, 1, 2, 2}, {1, 1, 1, 1});
  ints_attr(add_node(pg, "ConvTranspose", {"x", "w1"}, {"centre"}), "pads", {1, 1, 0, 0});
  add_output(pg, "full");
  add_output(pg, "centre");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(p, "convt_s1.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", x}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("full"), {1, 1, 3, 3}, {1.5f, 3.5f, 2.5f, 4.5f, 10.5f, 6.5f, 3.5f, 7.5f, 4.5f});
  check_f32(r->at("centre"), {1, 1, 2, 2}, {10, 6, 7, 4});

  // Two groups of one channel: y_c = x_c * w_c.
  auto q = model(13);
  auto* qg = q.mutable_graph();
  add_input(qg, "x", {1, 2, 1, 1});
  add_f32(qg, "w", {2, 1, 1, 1}, {3, 5});
  int_attr(add_node(qg, "ConvTranspose", {"x", "w"}, {"y"}), "group", 2);
  add_output(qg, "y");
  check_f32(run_model(q, "convt_group.onnx", {{"x", Tensor::f32({1, 2, 1, 1}, {1, 2})}}, "y"), {1, 2, 1, 1}, {3, 10});
}

TEST_CASE("onnx import: ConstantOfShape and Range fold, even into a graph output; ReduceSum noop") {
  auto m = model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", {2, 3});
  add_i64(g, "shape", {2, 3});
  add_node(g, "ConstantOfShape", {"shape"}, {"twos"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("value");
    a.set_type(onnx::AttributeProto::TENSOR);
    a.mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
    a.mutable_t()->add_dims(1);
    a.mutable_t()->add_float_data(2.0f);
    return a;
  }());
  add_node(g, "Mul", {"x", "twos"}, {"y"});
  auto* start = g->add_initializer();
  start->set_name("start");
  start->set_data_type(onnx::TensorProto::INT64);
  start->add_int64_data(1);
  auto* limit = g->add_initializer();
  limit->CopyFrom(*start);
  limit->set_name("limit");
  limit->set_int64_data(0, 8);
  auto* delta = g->add_initializer();
  delta->CopyFrom(*start);
  delta->set_name("delta");
  delta->set_int64_data(0, 3);
  add_node(g, "Range", {"start", "limit", "delta"}, {"r"});
  // ReduceSum with an empty axes constant and noop_with_empty_axes: the identity (this aborted
  // in the CPU lowering before: the canonical `axes` attribute was missing).
  add_i64(g, "no_axes", {});
  int_attr(add_node(g, "ReduceSum", {"y", "no_axes"}, {"same"}), "noop_with_empty_axes", 1);
  add_output(g, "same");
  add_output(g, "r");
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, "generated.onnx"), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto r = (*s)->run({{"x", Tensor::f32({2, 3}, {1, 2, 3, 4, 5, 6})}});
  REQUIRE_MESSAGE(r.ok(), r.status().to_string());
  check_f32(r->at("same"), {2, 3}, {2, 4, 6, 8, 10, 12});
  const Tensor& range = r->at("r");
  REQUIRE(range.dtype() == DType::kI64);
  REQUIRE(range.shape() == Shape{3});
  CHECK(range.i64()[0] == 1);
  CHECK(range.i64()[1] == 4);
  CHECK(range.i64()[2] == 7);
}

TEST_CASE("onnx import: opset 21 (Resize's half_pixel_symmetric of opset 19, Cast's saturate); opset 22 refused") {
  // Width 4 -> 2 by scale 0.6: in * scale = 2.4, so half_pixel is re-centred by
  // offset = 4 / 2 * (1 - 2 / 2.4) = 1/3: x_orig = 1/3 + (o + 0.5) / 0.6 - 0.5 = 2/3, 7/3;
  // linear on [1, 2, 3, 4]: 5/3, 10/3.
  auto m = model(21);
  auto* g = m.mutable_graph();
  add_input(g, "x", {1, 1, 1, 4});
  add_f32(g, "scales", {4}, {1, 1, 1, 0.6f});
  auto* n = add_node(g, "Resize", {"x", "", "scales"}, {"r"});
  str_attr(n, "mode", "linear");
  str_attr(n, "coordinate_transformation_mode", "half_pixel_symmetric");
  int_attr(add_node(g, "Cast", {"r"}, {"y"}), "to", 1);
  int_attr(g->mutable_node(1), "saturate", 1);
  add_output(g, "y");
  check_f32(run_model(m, "opset21.onnx", {{"x", Tensor::f32({1, 1, 1, 4}, {1, 2, 3, 4})}}, "y"), {1, 1, 1, 2},
            {5.0f / 3.0f, 10.0f / 3.0f});

  m.mutable_opset_import(0)->set_version(22);
  auto r = load_onnx(save(m, "opset22.onnx"));
  REQUIRE(!r.ok());
  CHECK(r.status().code() == StatusCode::kUnsupported);
  CHECK(has(r.status().message(), "opset 22"));
}
