// Helpers of the ONNX import tests (tests/graph/test_onnx_import.cc, test_onnx_ops.cc): models
// built with the ONNX protobuf API, saved to a scratch directory, loaded and run.
#pragma once

#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "graph/onnx/onnx_import.h"
#include "runtime/session.h"

namespace fusert::onnx_test {

namespace fs = std::filesystem;

inline fs::path scratch_dir() {
  fs::path d = fs::temp_directory_path() / ("fusert_onnx_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

inline onnx::ModelProto model(int64_t opset = 17) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  m.mutable_graph()->set_name("t");
  return m;
}

inline void add_input(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims,
                      const std::string& sym = "", int sym_at = -1, int elem = onnx::TensorProto::FLOAT) {
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

inline void add_output(onnx::GraphProto* g, const std::string& name) { g->add_output()->set_name(name); }

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, std::vector<std::string> in,
                                 std::vector<std::string> out, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& s : in) n->add_input(s);
  for (auto& s : out) n->add_output(s);
  return n;
}

inline void add_f32(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> dims, std::vector<float> v,
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

inline void add_i64(onnx::GraphProto* g, const std::string& name, std::vector<int64_t> v) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
}

inline std::string save(const onnx::ModelProto& m, const std::string& name) {
  const std::string p = (scratch_dir() / name).string();
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p;
}

inline bool has(const std::string& s, const std::string& f) { return s.find(f) != std::string::npos; }

inline void int_attr(onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}
inline void ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
inline void str_attr(onnx::NodeProto* n, const std::string& name, const std::string& v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(v);
}

// Loads `m`, runs it on `in`, returns output `out`.
inline Tensor run_model(const onnx::ModelProto& m, const std::string& file, const TensorMap& in,
                        const std::string& out) {
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(save(m, file), opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto y = (*s)->run(in);
  REQUIRE_MESSAGE(y.ok(), y.status().to_string());
  return y->at(out);
}

inline void check_f32(const Tensor& t, const Shape& shape, const std::vector<float>& want) {
  REQUIRE(t.dtype() == DType::kF32);
  REQUIRE(t.shape() == shape);
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      CHECK_MESSAGE(std::isnan(t.f32()[i]), "element " << i);
    else
      CHECK_MESSAGE(t.f32()[i] == doctest::Approx(want[i]).epsilon(1e-6), "element " << i);
  }
}

}  // namespace fusert::onnx_test
