// onnx_conformance: ONNX's own backend test data (Debian libonnx-testdata: node/,
// pytorch-converted/, pytorch-operator/, simple/) through fusert's ONNX import. Each case is a
// model.onnx with test_data_set_*/input_N.pb and output_N.pb; every case whose ops fusert
// supports runs on the CPU backend with each --fusion mode and its outputs are compared with
// the expected ones as ONNX's runner does (|got - want| <= atol + rtol * |want|, rtol 1e-3,
// atol 1e-7; integer outputs exact). A case fusert cannot import (an unsupported op, dtype or
// attribute: a kUnsupported load error) is skipped with the reason.
//
// fusert's shapes are static: inputs that set a shape or a parameter (Reshape's shape, Slice's
// starts, Resize's scales, Clip's min: the positions in kParamInputs) must be constants. ONNX's
// node tests feed them as graph inputs; when a load fails for that reason, the case is run again
// with those inputs bound at load to the values of test_data_set_0 (written as initializers of a
// copy of the model), as a user binds them. Such a case is reported as passed "with inputs bound
// at load" (the JSON's `bound` list names them), and only the data sets with the same values run.
//
//   onnx_conformance [--data DIR] [--suites node,simple,...] [--fusion none,all] [--filter S]
//                    [--json OUT] [--rtol R] [--atol A] [--rel-l2 L] [--verbose]
// (--rtol / --atol: the element-wise tolerances, ONNX's 1e-3 / 1e-7 by default; --rel-l2: also
// bound each float output's relative L2 error; --f64-as-f32: run float64 models in float32,
// SessionOptions::f64_as_f32, counted apart as "float64 models run in float32")
// Prints every failed case, the skipped ones with --verbose, and `N passed, N failed, N
// skipped` per suite; exit 1 when a case failed, 2 on bad usage or no test data.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "graph/onnx/onnx_import.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace fusert;

namespace {

struct Outcome {
  std::string suite, name, fusion, status, reason;  // status: passed, failed, skipped
  std::vector<std::string> ops;
  std::vector<std::string> bound;  // graph inputs bound at load (shape/parameter inputs)
  bool f64 = false;                // a float64 model, run in float32 (--f64-as-f32)
};

// Input positions that set a shape or a parameter fusert needs at load, per op type.
const std::map<std::string, std::set<int>>& param_inputs() {
  static const std::map<std::string, std::set<int>> m = {
      {"Reshape", {1}},        {"Slice", {1, 2, 3, 4}}, {"Unsqueeze", {1}},  {"Squeeze", {1}},
      {"Split", {1}},          {"Expand", {1}},         {"Tile", {1}},       {"Pad", {1, 2, 3}},
      {"Resize", {1, 2, 3}},   {"Upsample", {1}},       {"ReduceSum", {1}},  {"ReduceMean", {1}},
      {"ReduceMax", {1}},      {"ReduceMin", {1}},      {"Clip", {1, 2}},    {"ConstantOfShape", {0}},
      {"Range", {0, 1, 2}},    {"Dropout", {1, 2}},     {"Trilu", {1}},      {"CumSum", {1}},
      {"TopK", {1}},           {"OneHot", {1}},         {"HannWindow", {0}}, {"HammingWindow", {0}},
      {"BlackmanWindow", {0}}, {"Loop", {0, 1}}};
  return m;
}

// The graph inputs (not initializers) that are only read at parameter positions.
std::vector<std::string> param_graph_inputs(const onnx::ModelProto& m) {
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> out;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    bool used = false, only_params = true;
    for (const auto& n : m.graph().node()) {
      const auto it = param_inputs().find(n.op_type());
      for (int k = 0; k < n.input_size(); ++k) {
        if (n.input(k) != in.name()) continue;
        used = true;
        only_params &= it != param_inputs().end() && it->second.count(k) > 0;
      }
    }
    for (const auto& o : m.graph().output()) only_params &= o.name() != in.name();
    if (used && only_params) out.push_back(in.name());
  }
  return out;
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ',')) {
    if (!x.empty()) out.push_back(x);
  }
  return out;
}

std::vector<std::string> op_types(const std::string& model) {
  std::ifstream f(model, std::ios::binary);
  onnx::ModelProto m;
  std::set<std::string> ops;
  if (f && m.ParseFromIstream(&f)) {
    for (const auto& n : m.graph().node()) ops.insert(n.op_type());
  }
  return {ops.begin(), ops.end()};
}

std::string first_line(const std::string& s, size_t max = 300) {
  std::string l = s.substr(0, s.find('\n'));
  return l.size() > max ? l.substr(0, max) + "..." : l;
}

// The reason of a kUnsupported import error, without the path: "op types: Pad x1; ...".
std::string skip_reason(const std::string& msg) {
  std::string m = msg;
  const size_t colon = m.find(": ");
  if (colon != std::string::npos && m.compare(0, 1, "/") == 0) m = m.substr(colon + 2);
  std::string out;
  for (char c : m) out += c == '\n' ? ' ' : c;
  while (out.find("  ") != std::string::npos) out.replace(out.find("  "), 2, " ");
  return first_line(out);
}

// Compares `got` with `want` as ONNX's backend runner does; empty when they agree.
// The tolerances (--rtol, --atol: ONNX's runner's by default) and an optional bound on each
// float output's relative L2 error (--rel-l2; 0: none).
struct Tolerance {
  double rtol = 1e-3, atol = 1e-7, rel_l2 = 0;
};
Tolerance g_tol;
bool g_f64_as_f32 = false;  // --f64-as-f32: SessionOptions::f64_as_f32

// Whether the serialized float64 TensorProto at `pb` holds a finite value beyond float32's range
// (f64_as_f32 cannot represent it).
bool beyond_f32(const fs::path& pb) {
  std::ifstream f(pb, std::ios::binary);
  onnx::TensorProto t;
  if (!f || !t.ParseFromIstream(&f) || t.data_type() != onnx::TensorProto::DOUBLE) return false;
  std::vector<double> v(t.double_data().begin(), t.double_data().end());
  for (size_t k = 0; k + 8 <= t.raw_data().size(); k += 8) {
    double d;
    std::memcpy(&d, t.raw_data().data() + k, 8);
    v.push_back(d);
  }
  for (double d : v)
    if (std::isfinite(d) && std::fabs(d) > 3.4028234663852886e38) return true;
  return false;
}

// Whether the model at `path` has a float64 input or output, or casts to float64.
bool uses_f64(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) return false;
  for (const auto* list : {&m.graph().input(), &m.graph().output()})
    for (const auto& v : *list)
      if (v.type().tensor_type().elem_type() == onnx::TensorProto::DOUBLE) return true;
  for (const auto& n : m.graph().node())
    for (const auto& a : n.attribute())
      if ((n.op_type() == "Cast" && a.name() == "to") && a.i() == onnx::TensorProto::DOUBLE) return true;
  return false;
}

std::string compare(const Tensor& got, const Tensor& want, double rtol, double atol) {
  if (got.shape() != want.shape()) {
    // Scalars ([]) and [1] are interchangeable in some old test data.
    if (got.numel() != want.numel() || got.numel() != 1)
      return "shape " + shape_str(got.shape()) + ", expected " + shape_str(want.shape());
  }
  const int64_t n = want.numel();
  if (want.dtype() == DType::kF32) {
    if (got.dtype() != DType::kF32) return std::string("dtype ") + dtype_name(got.dtype()) + ", expected f32";
    for (int64_t i = 0; i < n; ++i) {
      const double a = got.f32()[i], b = want.f32()[i];
      if ((std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b)) continue;  // as numpy's allclose
      if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
        char buf[160];
        std::snprintf(buf, sizeof buf, "element %lld: %.7g, expected %.7g (rtol %.0e, atol %.0e)",
                      static_cast<long long>(i), a, b, rtol, atol);
        return buf;
      }
    }
    double num = 0, den = 0;
    for (int64_t i = 0; i < n && g_tol.rel_l2 > 0; ++i) {
      const double a = got.f32()[i], b = want.f32()[i];
      if ((std::isnan(a) && std::isnan(b)) || (std::isinf(a) && a == b)) continue;
      num += (a - b) * (a - b);
      den += b * b;
    }
    if (g_tol.rel_l2 > 0 && std::sqrt(num) > g_tol.rel_l2 * std::sqrt(den)) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "relative L2 error %.3g > %.0e", std::sqrt(num / (den > 0 ? den : 1)),
                    g_tol.rel_l2);
      return buf;
    }
    return "";
  }
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + dtype_name(got.dtype()) + ", expected " + dtype_name(want.dtype());
  if (std::memcmp(got.raw(), want.raw(), want.nbytes()) != 0) return "integer/bool values differ";
  return "";
}

// Writes a copy of `model` with the parameter inputs bound to test_data_set_0's values into
// `tmp`; fills `bound` (names) and `index` (each remaining graph input's input_N.pb number).
bool bind_param_inputs(const fs::path& dir, const fs::path& tmp, std::vector<std::string>* bound,
                       std::map<std::string, size_t>* index) {
  std::ifstream f(dir / "model.onnx", std::ios::binary);
  onnx::ModelProto m;
  if (!f || !m.ParseFromIstream(&f)) return false;
  *bound = param_graph_inputs(m);
  if (bound->empty()) return false;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
  size_t k = 0;
  for (const auto& in : m.graph().input()) {
    if (inits.count(in.name())) continue;
    const size_t idx = k++;
    if (std::find(bound->begin(), bound->end(), in.name()) == bound->end()) {
      (*index)[in.name()] = idx;
      *kept.Add() = in;
      continue;
    }
    std::ifstream tf(dir / "test_data_set_0" / ("input_" + std::to_string(idx) + ".pb"), std::ios::binary);
    onnx::TensorProto t;
    if (!tf || !t.ParseFromIstream(&tf)) return false;
    t.set_name(in.name());
    *m.mutable_graph()->add_initializer() = t;
  }
  m.mutable_graph()->mutable_input()->Swap(&kept);
  fs::create_directories(tmp);
  std::ofstream out(tmp / "model.onnx", std::ios::binary);
  return out && m.SerializeToOstream(&out);
}

// Whether `set` feeds the bound inputs the same bytes as test_data_set_0.
bool same_bound_values(const fs::path& dir, const fs::path& set, const std::vector<std::string>& bound,
                       const std::vector<std::string>& graph_inputs) {
  for (size_t i = 0; i < graph_inputs.size(); ++i) {
    if (std::find(bound.begin(), bound.end(), graph_inputs[i]) == bound.end()) continue;
    const std::string file = "input_" + std::to_string(i) + ".pb";
    std::ifstream a(dir / "test_data_set_0" / file, std::ios::binary), b(set / file, std::ios::binary);
    std::stringstream sa, sb;
    sa << a.rdbuf();
    sb << b.rdbuf();
    if (sa.str() != sb.str()) return false;
  }
  return true;
}

std::vector<std::string> graph_input_names(const fs::path& model) {
  std::ifstream f(model, std::ios::binary);
  onnx::ModelProto m;
  std::vector<std::string> out;
  if (!f || !m.ParseFromIstream(&f)) return out;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  for (const auto& in : m.graph().input())
    if (!inits.count(in.name())) out.push_back(in.name());
  return out;
}

Outcome run_case(const fs::path& dir, const std::string& suite, const std::string& fusion, const fs::path& tmp) {
  Outcome o{suite, dir.filename().string(), fusion, "passed", "", op_types((dir / "model.onnx").string()), {}};
  // fusert has no zero-size tensors (every dim >= 1): a case feeding one as data is skipped (an
  // empty parameter, such as ReduceSum's axes [], is bound at load and fine).
  std::vector<std::string> params;
  {
    std::ifstream f(dir / "model.onnx", std::ios::binary);
    onnx::ModelProto m;
    if (f && m.ParseFromIstream(&f)) params = param_graph_inputs(m);
  }
  const std::vector<std::string> names = graph_input_names(dir / "model.onnx");
  std::error_code no_set;
  std::string zero_input;  // the reason when an input is empty
  for (const auto& e : fs::directory_iterator(dir / "test_data_set_0", no_set)) {
    std::ifstream tf(e.path(), std::ios::binary);
    onnx::TensorProto t;
    const std::string file = e.path().filename().string();
    if (file.rfind("input_", 0) != 0 || !tf || !t.ParseFromIstream(&tf)) continue;
    const size_t k = static_cast<size_t>(std::atoi(file.c_str() + 6));
    if (k < names.size() && std::find(params.begin(), params.end(), names[k]) != params.end()) continue;
    for (int64_t d : t.dims()) {  // served only where every output is empty: a skip otherwise
      if (d == 0)
        zero_input = "a zero-size input (" + e.path().filename().string() + "; its outputs are not all empty)";
    }
  }
  SessionOptions opt;
  opt.threads = 1;
  opt.fusion = fusion;
  opt.f64_as_f32 = g_f64_as_f32;
  o.f64 = g_f64_as_f32 && uses_f64(dir / "model.onnx");
  auto s = Session::load((dir / "model.onnx").string(), opt);
  std::map<std::string, size_t> index;  // graph input -> its input_N.pb number
  const std::vector<std::string> graph_inputs = graph_input_names(dir / "model.onnx");
  for (size_t i = 0; i < graph_inputs.size(); ++i) index[graph_inputs[i]] = i;
  if (!s.ok() && s.status().code() == StatusCode::kUnsupported &&
      s.status().message().find("must be a constant") != std::string::npos) {
    std::map<std::string, size_t> kept;
    if (bind_param_inputs(dir, tmp, &o.bound, &kept)) {
      auto b = Session::load((tmp / "model.onnx").string(), opt);
      if (b.ok() || b.status().code() != StatusCode::kUnsupported ||
          b.status().message().find("must be a constant") == std::string::npos) {
        s = std::move(b);
        index = kept;
      } else {
        o.bound.clear();
      }
    } else {
      o.bound.clear();
    }
  }
  if (!s.ok()) {
    o.status = s.status().code() == StatusCode::kUnsupported || !zero_input.empty() ? "skipped" : "failed";
    o.reason =
        !zero_input.empty() ? zero_input : (o.status == "failed" ? "load: " : "") + skip_reason(s.status().message());
    return o;
  }
  const std::vector<TensorInfo> ins = (*s)->inputs(), outs = (*s)->outputs();
  std::vector<fs::path> sets;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {suite, o.name, fusion, "skipped", "no test_data_set", o.ops, {}};
  for (const fs::path& set : sets) {
    if (!o.bound.empty() && !same_bound_values(dir, set, o.bound, graph_inputs)) continue;
    for (const auto& e : fs::directory_iterator(set)) {
      if (o.f64 && e.path().extension() == ".pb" && beyond_f32(e.path())) {
        o.status = "skipped";
        o.reason = "float64 values beyond float32's range (" + e.path().filename().string() +
                   "; f64_as_f32 runs the model in float32)";
        return o;
      }
    }
    TensorMap inputs;
    for (size_t i = 0; i < ins.size(); ++i) {
      const auto it = index.find(ins[i].name);
      const size_t k = it == index.end() ? i : it->second;
      auto t = read_onnx_tensor((set / ("input_" + std::to_string(k) + ".pb")).string());
      if (!t.ok()) {
        o.status = t.status().code() == StatusCode::kUnsupported ? "skipped" : "failed";
        o.reason = "input " + std::to_string(k) + ": " + first_line(t.status().message());
        return o;
      }
      inputs[ins[i].name] = *t;
    }
    auto y = (*s)->run(inputs);
    if (!y.ok()) {
      o.status = zero_input.empty() ? "failed" : "skipped";
      o.reason = zero_input.empty() ? "run: " + first_line(y.status().message()) : zero_input;
      return o;
    }
    for (size_t i = 0; i < outs.size(); ++i) {
      auto want = read_onnx_tensor((set / ("output_" + std::to_string(i) + ".pb")).string());
      if (!want.ok()) {
        o.status = want.status().code() == StatusCode::kUnsupported ? "skipped" : "failed";
        o.reason = "output " + std::to_string(i) + ": " + first_line(want.status().message());
        return o;
      }
      const std::string diff = compare(y->at(outs[i].name), *want, g_tol.rtol, g_tol.atol);
      if (!diff.empty()) {
        o.status = "failed";
        o.reason = set.filename().string() + " output '" + outs[i].name + "': " + diff;
        return o;
      }
    }
  }
  return o;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string data = "/usr/share/libonnx-testdata/data", filter, json;
  std::vector<std::string> suites = {"node", "pytorch-converted", "pytorch-operator", "simple"};
  std::vector<std::string> fusions = {"none", "all"};
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (a == "--data" && has)
      data = argv[++i];
    else if (a == "--suites" && has)
      suites = split(argv[++i]);
    else if (a == "--fusion" && has)
      fusions = split(argv[++i]);
    else if (a == "--filter" && has)
      filter = argv[++i];
    else if (a == "--json" && has)
      json = argv[++i];
    else if (a == "--rtol" && has)
      g_tol.rtol = std::atof(argv[++i]);
    else if (a == "--atol" && has)
      g_tol.atol = std::atof(argv[++i]);
    else if (a == "--rel-l2" && has)
      g_tol.rel_l2 = std::atof(argv[++i]);
    else if (a == "--f64-as-f32")
      g_f64_as_f32 = true;
    else if (a == "--verbose")
      verbose = true;
    else {
      std::fprintf(stderr,
                   "usage: onnx_conformance [--data DIR] [--suites a,b] [--fusion none,all] [--filter S] "
                   "[--json OUT] [--rtol R] [--atol A] [--rel-l2 L] [--f64-as-f32] [--verbose]\n");
      return 2;
    }
  }
  if (!fs::is_directory(data)) {
    std::fprintf(stderr, "onnx_conformance: no test data at %s (apt-get install libonnx-testdata)\n", data.c_str());
    return 2;
  }
  std::vector<Outcome> all;
  const fs::path tmp = fs::temp_directory_path() / ("fusert_onnx_conformance_" + std::to_string(::getpid()));
  for (const std::string& suite : suites) {
    std::vector<fs::path> cases;
    if (!fs::is_directory(fs::path(data) / suite)) continue;
    for (const auto& e : fs::directory_iterator(fs::path(data) / suite)) {
      if (fs::exists(e.path() / "model.onnx") && e.path().filename().string().find(filter) != std::string::npos)
        cases.push_back(e.path());
    }
    std::sort(cases.begin(), cases.end());
    int counts[3] = {0, 0, 0}, bound = 0, f64 = 0;
    for (const fs::path& c : cases) {
      for (const std::string& f : fusions) {
        Outcome o = run_case(c, suite, f, tmp);
        const int k = o.status == "passed" ? 0 : o.status == "failed" ? 1 : 2;
        ++counts[k];
        bound += k == 0 && !o.bound.empty();
        f64 += k == 0 && o.f64;
        if (k == 1 || (k == 2 && verbose)) {
          std::printf("%s %s/%s [fusion %s]: %s\n", k == 1 ? "FAILED " : "skipped", suite.c_str(), o.name.c_str(),
                      f.c_str(), o.reason.c_str());
        }
        all.push_back(std::move(o));
      }
    }
    std::printf(
        "[onnx] %-18s %d passed (%d of them with shape inputs bound at load, %d float64 models run in float32), %d "
        "failed, %d skipped (%zu cases x %zu fusion modes)\n",
        suite.c_str(), counts[0], bound, f64, counts[1], counts[2], cases.size(), fusions.size());
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  int total[3] = {0, 0, 0};
  for (const Outcome& o : all) ++total[o.status == "passed" ? 0 : o.status == "failed" ? 1 : 2];
  std::printf("[onnx] total: %d passed, %d failed, %d skipped\n", total[0], total[1], total[2]);
  if (!json.empty()) {
    std::ofstream f(json);
    f << "[\n";
    for (size_t i = 0; i < all.size(); ++i) {
      const Outcome& o = all[i];
      f << "  {\"suite\": " << json_str(o.suite) << ", \"case\": " << json_str(o.name)
        << ", \"fusion\": " << json_str(o.fusion) << ", \"status\": " << json_str(o.status)
        << ", \"reason\": " << json_str(o.reason) << ", \"ops\": [";
      for (size_t k = 0; k < o.ops.size(); ++k) f << (k ? ", " : "") << json_str(o.ops[k]);
      f << "], \"bound\": [";
      for (size_t k = 0; k < o.bound.size(); ++k) f << (k ? ", " : "") << json_str(o.bound[k]);
      f << "], \"f64\": " << (o.f64 ? "true" : "false") << "}" << (i + 1 < all.size() ? "," : "") << "\n";
    }
    f << "]\n";
  }
  return total[1] ? 1 : 0;
}
