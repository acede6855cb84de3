// fusert-zoo: model-zoo regression runs. For every model x device x fusion mode of a manifest
// (models/ZOO.md; ours is models/zoo.yaml) it loads the model, runs it on the manifest's inputs,
// and checks: the output against the reference (a golden .npy or a command such as ONNX Runtime)
// and against the unfused run (fusion none, same device), the kernels, intermediate and peak
// activation bytes against the manifest's bounds, and, with --baseline, kernels, memory and the
// latency ratio to the unfused run of the same run against a previous run's. One table, a JSON
// and a JUnit report; a model that fails to load is reported and the run goes on.
//
// Exit 0 when every row passes or is skipped (CUDA rows without a device), 1 on any regression
// or error, 2 on bad usage or an unreadable manifest.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "apps/zoo/manifest.h"
#include "apps/zoo/report.h"
#include "runtime/backend.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace fs = std::filesystem;
using namespace fusert;
using namespace fusert::zoo;

namespace {

const char* kUsage =
    "usage: fusert-zoo [--manifest F] [--device D[,D...]|all] [--models a,b] [--fusion none,all,...]\n"
    "                  [--runs N] [--json out.json] [--junit out.xml] [--baseline prev.json]\n"
    "                  [--update-baseline]\n"
    "Model-zoo regression run: every model x device x fusion mode of the manifest (default\n"
    "models/zoo.yaml; format in models/ZOO.md), checked against its reference, the unfused run,\n"
    "its kernel and memory bounds and, with --baseline, a previous run (--update-baseline writes\n"
    "this run there instead). Exit 1 on any regression or load error, 2 on bad usage.\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string x;
  while (std::getline(ss, x, ','))
    if (!x.empty()) out.push_back(x);
  return out;
}

double rel_l2(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = got[i] - want[i];
    num += d * d;
    den += want[i] * want[i];
  }
  if (std::isnan(num)) return NAN;
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::kF32:
        v[static_cast<size_t>(i)] = t.f32()[i];
        break;
      case DType::kI64:
        v[static_cast<size_t>(i)] = static_cast<double>(t.i64()[i]);
        break;
      default:
        v[static_cast<size_t>(i)] = 0;
    }
  }
  return v;
}

// The compared outputs flattened and concatenated (the manifest's `reference.outputs`, else the
// first output).
Result<std::vector<double>> compared(const ZooModel& m, const Session& s, const TensorMap& out) {
  std::vector<std::string> names = m.reference_outputs;
  if (names.empty()) names.push_back(s.outputs().at(0).name);
  std::vector<double> v;
  for (const std::string& n : names) {
    auto it = out.find(n);
    if (it == out.end()) return error(StatusCode::kNotFound) << "reference output '" << n << "' is not an output";
    const std::vector<double> d = as_doubles(it->second);
    v.insert(v.end(), d.begin(), d.end());
  }
  return v;
}

// The model's inputs: seeded, then the image (first input), then the named .npy files.
Result<TensorMap> make_inputs(const ZooModel& m, const Session& s) {
  TensorMap in = s.seeded_inputs(m.input_seed);
  if (!m.image.empty()) {
    FUSERT_ASSIGN_OR_RETURN(Tensor t, s.read_image(m.image));
    in[s.inputs().at(0).name] = t;
  }
  for (const auto& [name, file] : m.npy_inputs) {
    if (!in.count(name)) return error(StatusCode::kNotFound) << "inputs.npy: '" << name << "' is not a model input";
    FUSERT_ASSIGN_OR_RETURN(in[name], read_npy(file));
  }
  return in;
}

// Runs the reference command once: inputs written as <dir>/<name>.npy, output read back.
Result<std::vector<double>> run_reference_command(const ZooModel& m, const TensorMap& in) {
  const fs::path dir = fs::temp_directory_path() / ("fusert_zoo_" + std::to_string(::getpid()) + "_" + m.name);
  fs::create_directories(dir / "inputs");
  for (const auto& [name, t] : in) FUSERT_RETURN_IF_ERROR(write_npy((dir / "inputs" / (name + ".npy")).string(), t));
  const std::string out = (dir / "output.npy").string();
  std::string cmd = m.reference_command;
  auto sub = [&cmd](const std::string& key, const std::string& v) {
    for (size_t p; (p = cmd.find(key)) != std::string::npos;) cmd.replace(p, key.size(), "'" + v + "'");
  };
  sub("{model}", m.model);
  sub("{inputs}", (dir / "inputs").string());
  sub("{output}", out);
  const std::string full = "cd '" + m.dir + "' && " + cmd + " > '" + (dir / "log.txt").string() + "' 2>&1";
  const int rc = std::system(full.c_str());
  Result<Tensor> t = rc == 0 ? read_npy(out) : Result<Tensor>(error(StatusCode::kIoError) << "exit status " << rc);
  std::string log;
  {
    std::ifstream f(dir / "log.txt");
    std::stringstream ss;
    ss << f.rdbuf();
    log = ss.str();
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!t.ok()) {
    return error(StatusCode::kIoError) << "reference command failed (" << t.status().message() << "): " << cmd
                                       << (log.empty() ? "" : "\n  " + log.substr(0, 400));
  }
  return as_doubles(*t);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Progress {
  bool tty = ::isatty(STDERR_FILENO) != 0;
  size_t done = 0, total = 0;
  void show(const std::string& what) {
    if (!tty) return;
    const int width = 30, filled = total ? static_cast<int>(width * done / total) : 0;
    std::fprintf(stderr, "\r[%s%s] %zu/%zu %-48.48s", std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), '.').c_str(), done, total, what.c_str());
    std::fflush(stderr);
  }
  void finish() {
    if (tty) std::fprintf(stderr, "\r%100s\r", "");
  }
};

// The reference output of one model: loaded (or its command run) once, for every device.
struct Reference {
  std::vector<double> values;
  std::string error;
  bool loaded = false;
};

// What the rows of one model on one device share: the reference and the unfused run.
struct ModelState {
  Reference* ref = nullptr;
  std::vector<double> unfused;
  double unfused_ms = 0;
};

SessionOptions session_options(const ZooModel& m, const std::string& device, const std::string& fusion) {
  SessionOptions o;
  o.device = device;
  o.fusion = fusion;
  o.threads = m.threads;
  o.input_shapes = m.shapes;
  o.seeded = m.weights == "seeded";
  o.seed = m.seed;
  if (m.weights != "model" && m.weights != "seeded") o.weights = m.weights;
  return o;
}

// The reference output, once per model and device: the golden .npy or the command's output.
void load_reference(const ZooModel& m, const TensorMap& in, ModelState* st) {
  Reference* ref = st->ref;
  if (ref->loaded || (m.reference_npy.empty() && m.reference_command.empty())) return;
  ref->loaded = true;
  if (!m.reference_npy.empty()) {
    auto t = read_npy(m.reference_npy);
    if (t.ok())
      ref->values = as_doubles(*t);
    else
      ref->error = t.status().message();
    return;
  }
  auto v = run_reference_command(m, in);
  if (v.ok())
    ref->values = *v;
  else
    ref->error = v.status().message();
}

// A cold run, `warmup` untimed runs, then `runs` timed ones: the last outputs and the median.
Result<TensorMap> timed_runs(Session& s, const TensorMap& in, int warmup, int runs, double* median_ms) {
  Result<TensorMap> out = s.run(in);
  std::vector<double> times;
  for (int i = 0; out.ok() && i < warmup + runs; ++i) {
    const auto a = std::chrono::steady_clock::now();
    out = s.run(in);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    if (i >= warmup) times.push_back(ms);
  }
  *median_ms = median(times);
  return out;
}

// "kernels 2 > bound 1", "rel. L2 vs the reference 1.18 > tolerance 0.0001".
std::string exceeds(const char* what, double got, const char* limit, double bound, const char* unit) {
  char b[200];
  std::snprintf(b, sizeof b, "%s %.4g%s > %s %.4g%s", what, got, unit, limit, bound, unit);
  return b;
}

// The output against the reference and the unfused run; the plan against the bounds.
void check_row(const ZooModel& m, const std::vector<double>& got, ModelState* st, Row* r,
               std::vector<std::string>* fails) {
  if (r->fusion == "none") st->unfused = got, st->unfused_ms = r->latency_ms;
  if (!st->unfused.empty()) r->err_unfused = rel_l2(got, st->unfused);
  if (st->unfused_ms > 0) r->ratio_to_unfused = r->latency_ms / st->unfused_ms;
  if (!st->ref->error.empty()) {
    fails->push_back("reference: " + st->ref->error.substr(0, 300));
  } else if (!st->ref->values.empty()) {
    r->err_reference = rel_l2(got, st->ref->values);
    if (!(r->err_reference <= m.tolerance))
      fails->push_back(exceeds("rel. L2 vs the reference", r->err_reference, "tolerance", m.tolerance, ""));
  }
  if (r->err_unfused >= 0 && !(r->err_unfused <= m.tolerance))
    fails->push_back(exceeds("rel. L2 vs fusion none", r->err_unfused, "tolerance", m.tolerance, ""));
}

void check_bounds(const ZooModel& m, const Row& r, std::vector<std::string>* fails) {
  auto bound = [&](const auto& table, double got, const char* what, const char* unit) {
    auto it = table.find(r.fusion);
    if (it != table.end() && got > static_cast<double>(it->second))
      fails->push_back(exceeds(what, got, "bound", static_cast<double>(it->second), unit));
  };
  const ZooBounds& b = r.device == "cuda" ? m.expect_cuda : m.expect;
  bound(b.kernels, static_cast<double>(r.kernels), "kernels", "");
  bound(b.peak_mb, mib(r.peak_bytes), "peak activations", " MiB");
  bound(b.intermediate_mb, mib(r.intermediate_bytes), "intermediate traffic", " MiB");
}

// A multi-line error (the import's list of unsupported ops, one per line) as one line for the
// row and the JSON: "unsupported by fusert: op types: Acos x1 (#0); Asin x2 (#1, #4)".
std::string one_line(const std::string& msg) {
  std::string out;
  size_t pos = 0;
  while (pos <= msg.size()) {
    size_t end = msg.find('\n', pos);
    if (end == std::string::npos) end = msg.size();
    size_t first = msg.find_first_not_of(" \t", pos);
    if (first != std::string::npos && first < end) {
      const std::string line = msg.substr(first, end - first);
      if (!out.empty()) out += out.back() == ':' ? " " : "; ";
      out += line;
    }
    pos = end + 1;
  }
  return out;
}

// One row: load, run, check. Never throws away the run: every outcome is a status and reason.
Row run_row(const ZooModel& m, const std::string& device, const std::string& fusion, ModelState* st) {
  Row r;
  r.model = m.name, r.device = device, r.fusion = fusion;
  auto s = Session::load(m.model, session_options(m, device, fusion));
  if (!s.ok()) {
    const std::string msg = s.status().message();
    if (device == "cuda" && s.status().code() == StatusCode::kDeviceError) {
      r.status = "skipped", r.reason = "no CUDA device";
    } else {
      r.status = "error";
      r.reason = "load: " + one_line(msg) + (m.fetch.empty() ? "" : " (fetch: " + m.fetch + ")");
    }
    return r;
  }
  Session& sess = **s;
  r.kernels = sess.stats().kernels;
  r.intermediate_bytes = sess.stats().intermediate_bytes;
  r.peak_bytes = sess.stats().peak_activation_bytes;
  auto in = make_inputs(m, sess);
  if (!in.ok()) {
    r.status = "error", r.reason = "inputs: " + one_line(in.status().message());
    return r;
  }
  load_reference(m, *in, st);
  Result<TensorMap> out = timed_runs(sess, *in, m.warmup, m.runs, &r.latency_ms);
  if (!out.ok()) {
    r.status = "error", r.reason = "run: " + one_line(out.status().message());
    return r;
  }
  auto got = compared(m, sess, *out);
  if (!got.ok()) {
    r.status = "error", r.reason = one_line(got.status().message());
    return r;
  }
  std::vector<std::string> fails;
  check_row(m, *got, st, &r, &fails);
  check_bounds(m, r, &fails);
  r.status = fails.empty() ? "ok" : "FAIL";
  for (size_t i = 0; i < fails.size(); ++i) r.reason += (i ? "; " : "") + fails[i];
  return r;
}

// Runs one model on one device: every fusion mode, unfused first.
void run_model(const ZooModel& m, const std::string& device, const std::vector<std::string>& fusions, Reference* ref,
               Progress* progress, std::vector<Row>* rows) {
  ModelState st;
  st.ref = ref;
  for (const std::string& fusion : fusions) {
    progress->show(m.name + " " + device + " " + fusion);
    const auto t0 = std::chrono::steady_clock::now();
    Row r = run_row(m, device, fusion, &st);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows->push_back(r);
    ++progress->done;
  }
}

struct Args {
  std::string manifest = FUSERT_ZOO_DEFAULT_MANIFEST, json, junit, baseline, device, models, fusion;
  bool update = false;
  int runs = 0;
};

// Parses the command line; an exit status (0 for --help, 2 for a bad one) when it ends here.
std::optional<int> parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string o = argv[i];
    const bool has = i + 1 < argc;
    std::string* value = o == "--manifest"   ? &a->manifest
                         : o == "--device"   ? &a->device
                         : o == "--models"   ? &a->models
                         : o == "--fusion"   ? &a->fusion
                         : o == "--json"     ? &a->json
                         : o == "--junit"    ? &a->junit
                         : o == "--baseline" ? &a->baseline
                                             : nullptr;
    if (o == "--help" || o == "-h") {
      std::fputs(kUsage, stdout);
      std::printf("Devices in this build (--device): %s.\n", backend_list().c_str());
      return 0;
    } else if (o == "--update-baseline") {
      a->update = true;
    } else if (o == "--runs" && has) {
      char* end = nullptr;
      const long r = std::strtol(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0' || r < 1 || r > 1000000) {
        std::fprintf(stderr, "fusert-zoo: --runs: expected an integer in 1..1000000, got '%s'\n", argv[i]);
        return 2;
      }
      a->runs = static_cast<int>(r);
    } else if (value && has) {
      *value = argv[++i];
    } else {
      std::fprintf(stderr, "fusert-zoo: unknown or incomplete option '%s'\n%s", o.c_str(), kUsage);
      return 2;
    }
  }
  if (a->update && a->baseline.empty()) {
    std::fprintf(stderr, "fusert-zoo: --update-baseline needs --baseline FILE\n");
    return 2;
  }
  for (const std::string& f : split(a->fusion)) {  // each mode checked before any model loads
    FusionOptions fopt;
    std::string why;
    if (!parse_fusion_mode(f, &fopt, &why)) {
      std::fprintf(stderr, "fusert-zoo: --fusion: '%s': %s\n", f.c_str(), why.c_str());
      return 2;
    }
  }
  const std::vector<std::string> devices = split(a->device);
  if (devices.size() > 1 && std::find(devices.begin(), devices.end(), "all") != devices.end()) {
    std::fprintf(stderr, "fusert-zoo: --device all stands alone, not in a list ('%s')\n", a->device.c_str());
    return 2;
  }
  for (const std::string& d : devices) {
    if (d != "all" && !is_backend(d)) {
      std::fprintf(stderr, "fusert-zoo: --device must be %s, a comma list of them, or all; got '%s'\n",
                   backend_list().c_str(), d.c_str());
      return 2;
    }
  }
  return std::nullopt;
}

// The manifest's models that --models names (all without it), with the overrides applied and
// fusion none first; false (after a message) for a name the manifest lacks.
bool select_models(const std::vector<ZooModel>& all, const Args& a, std::vector<ZooModel>* out, size_t* rows) {
  const std::vector<std::string> wanted = split(a.models);
  for (const std::string& w : wanted) {
    if (std::none_of(all.begin(), all.end(), [&](const ZooModel& m) { return m.name == w; })) {
      std::fprintf(stderr, "fusert-zoo: --models: no model '%s' in %s\n", w.c_str(), a.manifest.c_str());
      return false;
    }
  }
  for (ZooModel m : all) {
    if (!wanted.empty() && std::find(wanted.begin(), wanted.end(), m.name) == wanted.end()) continue;
    if (!a.device.empty()) m.devices = a.device == "all" ? backend_names() : split(a.device);
    if (!a.fusion.empty()) m.fusion = split(a.fusion);
    // The unfused run comes first: every other mode is compared with it.
    m.fusion.erase(std::remove(m.fusion.begin(), m.fusion.end(), "none"), m.fusion.end());
    m.fusion.insert(m.fusion.begin(), "none");
    if (a.runs > 0) m.runs = a.runs;
    *rows += m.devices.size() * m.fusion.size();
    out->push_back(m);
  }
  return true;
}

// The table, the JSON and JUnit files, the baseline; false when a file could not be written.
bool report(const Args& a, const std::vector<Row>& rows, double seconds) {
  print_table(rows, a.manifest, seconds);
  bool ok = true;
  auto check = [&](const Status& st) {
    if (st.ok()) return;
    std::fprintf(stderr, "fusert-zoo: error: %s\n", st.message().c_str());
    ok = false;
  };
  if (!a.json.empty()) check(write_json(a.json, rows, a.manifest));
  if (!a.junit.empty()) check(write_junit(a.junit, rows, seconds));
  if (a.update) {
    check(write_json(a.baseline, rows, a.manifest));
    if (ok) std::printf("baseline written: %s\n", a.baseline.c_str());
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (std::optional<int> rc = parse_args(argc, argv, &a)) return *rc;
  auto models = read_manifest(a.manifest);
  if (!models.ok()) {
    std::fprintf(stderr, "fusert-zoo: error: %s\n", models.status().message().c_str());
    return 2;
  }
  std::vector<Baseline> base;
  if (!a.baseline.empty() && !a.update) {
    auto b = read_baseline(a.baseline);
    if (!b.ok()) {
      std::fprintf(stderr, "fusert-zoo: error: %s\n", b.status().message().c_str());
      return 2;
    }
    base = *b;
  }
  std::vector<ZooModel> selected;
  Progress progress;
  if (!select_models(*models, a, &selected, &progress.total)) return 2;
  if (progress.total == 0) {  // a run that checks nothing must not pass
    std::fprintf(stderr, "fusert-zoo: %s: no rows to run (every selected model has no device or no fusion mode)\n",
                 a.manifest.c_str());
    return 2;
  }
  std::vector<Row> rows;
  const auto t0 = std::chrono::steady_clock::now();
  for (const ZooModel& m : selected) {
    Reference ref;  // one per model, whatever the devices
    for (const std::string& d : m.devices) run_model(m, d, m.fusion, &ref, &progress, &rows);
  }
  progress.finish();
  for (Row& r : rows) {
    const auto m = std::find_if(selected.begin(), selected.end(), [&](const ZooModel& x) { return x.name == r.model; });
    if (!base.empty()) compare_with_baseline(base, m->latency_margin, &r);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool written = report(a, rows, seconds);
  const bool bad =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.status == "FAIL" || r.status == "error"; });
  return bad || !written ? 1 : 0;
}
