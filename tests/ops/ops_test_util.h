// Helpers for the per-op end-to-end tests: build a tiny YAML model (inputs, f32/i64 constants,
// one or more nodes), write it to a scratch file, run it through Session, and compare outputs
// with hand-computed values or a naive loop.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::test {

/// Bound for comparisons against a double-precision naive loop: |got - ref| <= kTol * (1 + |ref|).
constexpr double kTol = 1e-4;

/// A scratch directory unique to this process, removed at exit.
inline std::string scratch_dir() {
  struct Dir {
    std::filesystem::path path;
    Dir() : path(std::filesystem::temp_directory_path() / ("fusert_ops_test_" + std::to_string(::getpid()))) {
      std::filesystem::create_directories(path);
    }
    ~Dir() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path.string();
}

/// "[1, 2.5, -3]" with enough digits to round-trip every float.
inline std::string yaml_list(const std::vector<float>& v) {
  std::string s = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v[i]));
    s += (i ? ", " : "") + std::string(buf);
  }
  return s + "]";
}

inline std::string yaml_list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

inline int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

/// Builds a one-graph model as YAML text.
class ModelBuilder {
 public:
  ModelBuilder& input(const std::string& name, const Shape& shape, const std::string& dtype = "f32") {
    inputs_ += "  - {name: " + name + ", shape: " + yaml_list(shape) + ", dtype: " + dtype + "}\n";
    return *this;
  }
  ModelBuilder& constant(const std::string& name, const Shape& shape, const std::vector<float>& v) {
    REQUIRE(static_cast<int64_t>(v.size()) == numel(shape));
    inits_ += "  - {name: " + name + ", shape: " + yaml_list(shape) + ", value: " + yaml_list(v) + "}\n";
    return *this;
  }
  ModelBuilder& constant_i64(const std::string& name, const std::vector<int64_t>& v) {
    inits_ += "  - {name: " + name + ", shape: [" + std::to_string(v.size()) + "], dtype: i64, value: " + yaml_list(v) +
              "}\n";
    return *this;
  }
  /// `ins` are input value names ("" for an omitted one); `out` is the output name (or several,
  /// comma separated); `attrs` is the text of a flow mapping body, e.g. "strides: [2, 2], group: 3".
  ModelBuilder& node(const std::string& op, const std::vector<std::string>& ins, const std::string& out,
                     const std::string& attrs = "") {
    std::string list;
    for (size_t i = 0; i < ins.size(); ++i) list += (i ? ", " : "") + std::string("\"") + ins[i] + "\"";
    nodes_ += "  - {name: n" + std::to_string(count_++) + ", op: " + op + ", inputs: [" + list + "], outputs: [" + out +
              "]" + (attrs.empty() ? "" : ", attrs: {" + attrs + "}") + "}\n";
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    outputs_ += (outputs_.empty() ? "" : ", ") + name;
    return *this;
  }
  std::string yaml() const {
    return "fusert: 1\nname: op_test\ninputs:\n" + inputs_ + "outputs: [" + outputs_ + "]\n" +
           (inits_.empty() ? "" : "initializers:\n" + inits_) + "nodes:\n" + nodes_;
  }

 private:
  std::string inputs_, inits_, nodes_, outputs_;
  int count_ = 0;
};

inline TensorMap run_with_fusion(const std::string& path, const std::string& fusion, const TensorMap& inputs) {
  SessionOptions o;
  o.fusion = fusion;
  auto s = Session::load(path, o);
  if (!s.ok()) FAIL("Session::load (fusion " << fusion << "): " << s.status().to_string());
  auto out = (*s)->run(inputs);
  if (!out.ok()) FAIL("run (fusion " << fusion << "): " << out.status().to_string());
  return std::move(out).value();
}

/// Writes the model to a fresh scratch file and runs it through Session twice: unfused as
/// written (fusion raw; the result returned, checked by the caller) and with every fusion strategy, which must agree
/// with it to kTol * (1 + |unfused|) (NaN with NaN, infinities exactly).
inline TensorMap run_model(const ModelBuilder& m, const TensorMap& inputs) {
  static int counter = 0;
  std::string path = scratch_dir() + "/model" + std::to_string(counter++) + ".yaml";
  {
    std::ofstream f(path);
    f << m.yaml();
  }
  INFO(m.yaml());
  TensorMap plain = run_with_fusion(path, "raw", inputs);
  TensorMap fused = run_with_fusion(path, "all", inputs);
  REQUIRE(fused.size() == plain.size());
  for (const auto& [name, t] : plain) {
    REQUIRE(fused.count(name));
    const Tensor& f = fused.at(name);
    REQUIRE(f.shape() == t.shape());
    if (t.dtype() != DType::kF32) continue;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const float a = t.f32()[i], b = f.f32()[i];
      const bool same = (std::isnan(a) && std::isnan(b)) || a == b ||
                        (std::isfinite(a) && std::fabs(static_cast<double>(a) - b) <= kTol * (1 + std::fabs(a)));
      if (!same) {
        FAIL_CHECK("output '" << name << "' index " << i << ": unfused " << a << ", fused " << b);
        break;
      }
    }
  }
  return plain;
}

/// Runs a model with one input "x" and returns its single output "y".
inline Tensor run1(const ModelBuilder& m, const Tensor& x) {
  TensorMap out = run_model(m, {{"x", x}});
  REQUIRE(out.count("y"));
  return out.at("y");
}

inline std::vector<float> values(const Tensor& t) { return std::vector<float>(t.f32(), t.f32() + t.numel()); }

inline std::vector<float> random_floats(int64_t n, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(gen);
  return v;
}

inline Tensor random_tensor(const Shape& s, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  return Tensor::f32(s, random_floats(numel(s), seed, lo, hi));
}

/// Element-wise check against hand-computed values; eps 0 means bit-exact equality (NaN
/// matches NaN).
inline void expect_values(const Tensor& got, const Shape& shape, const std::vector<float>& want, double eps = 1e-6) {
  CHECK(got.shape() == shape);
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    float g = got.f32()[i];
    INFO("index " << i << ": got " << g << ", want " << want[i]);
    if (std::isnan(want[i])) {
      CHECK(std::isnan(g));
    } else if (eps == 0.0 || std::isinf(want[i])) {
      CHECK(g == want[i]);
    } else {
      CHECK(g == doctest::Approx(want[i]).epsilon(eps));
    }
  }
}

/// Comparison against a naive reference: max |got - ref| / (1 + |ref|) <= kTol.
inline void expect_close(const Tensor& got, const Shape& shape, const std::vector<double>& ref, double tol = kTol) {
  CHECK(got.shape() == shape);
  REQUIRE(got.numel() == static_cast<int64_t>(ref.size()));
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    double e = std::fabs(static_cast<double>(got.f32()[i]) - ref[i]) / (1.0 + std::fabs(ref[i]));
    if (!(e <= worst)) {
      worst = e;
      at = i;
    }
  }
  INFO("worst error " << worst << " at index " << at << ": got " << got.f32()[at] << ", ref " << ref[at]);
  CHECK(worst <= tol);
}

/// Row-major strides of a shape.
inline std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * s[i];
  return st;
}

}  // namespace fusert::test
