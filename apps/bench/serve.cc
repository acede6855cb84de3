#include "apps/bench/serve.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "graph/onnx/onnx_import.h"
#include "runtime/npy.h"
#include "runtime/session.h"

namespace fusert::bench {
namespace {

// Peak resident set of this process image in kB: VmHWM from /proc/self/status (not
// getrusage's ru_maxrss, which Linux carries across execve from the parent that forked us).
long peak_rss_kb() {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  }
  std::fclose(f);
  return kb;
}

std::string json_escape(const std::string& s) {
  std::string r;
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (c == '\n') {
      r += "\\n";
      continue;
    }
    r += c;
  }
  return r;
}

int fail(const std::string& msg) {
  std::printf("{\"error\": \"%s\"}\n", json_escape(msg).c_str());
  std::fflush(stdout);
  return 1;
}

struct ServeArgs {
  std::string model;
  SessionOptions options;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, .npy path
};

}  // namespace

bool parse_threads(const std::string& v, int* threads) {
  char* end = nullptr;
  const long t = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || t < 0 || t > 1024) return false;
  *threads = static_cast<int>(t);
  return true;
}

namespace {

// Returns an error message, empty when the arguments parse.
std::string parse(const std::vector<std::string>& args, ServeArgs& a) {
  a.options.seeded = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& k = args[i];
    const bool has_value = i + 1 < args.size();
    if (k == "--fusion" && has_value) {
      a.options.fusion = args[++i];
    } else if (k == "--threads" && has_value) {
      const std::string& v = args[++i];
      if (!parse_threads(v, &a.options.threads)) return "--threads: expected an integer 0..1024, got '" + v + "'";
    } else if (k == "--cpu-kernels" && has_value) {
      a.options.cpu_kernels = args[++i];
    } else if (k == "--precision" && has_value) {  // f32 or bf16, as infer --precision
      a.options.precision = args[++i];
    } else if (k == "--shape" && has_value) {  // ONNX: NAME=1x3x640x640, as infer --shape
      Status st = parse_shape_binding(args[++i], &a.options.input_shapes);
      if (!st.ok()) return "--shape: " + st.message();
    } else if (k == "--input" && has_value) {
      const std::string& v = args[++i];
      const size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) return "--input: expected NAME=FILE.npy, got '" + v + "'";
      a.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (k[0] == '-') {
      return "unknown or incomplete option '" + k + "'";
    } else if (a.model.empty()) {
      a.model = k;
    } else {
      return "more than one model given ('" + a.model + "', '" + k + "')";
    }
  }
  return a.model.empty() ? "--serve needs a model (.yaml or .onnx)" : "";
}

// The `profile` command: Session::profile over 5 runs, the reference-loop steps summed.
Status print_profile(const Session& s, const TensorMap& in) {
  FUSERT_ASSIGN_OR_RETURN(auto prof, s.profile(in, 5));
  double total = 0, ref = 0;
  int ref_steps = 0;
  std::string kernels;
  for (const StepTime& t : prof) {
    total += t.ms;
    if (!t.reference_loop) continue;
    ref += t.ms;
    ++ref_steps;
    kernels += (kernels.empty() ? "\"" : ", \"") + json_escape(t.kernel) + "\"";
  }
  std::printf("{\"total_ms\": %.6f, \"reference_ms\": %.6f, \"reference_steps\": %d, \"reference_kernels\": [%s]}\n",
              total, ref, ref_steps, kernels.c_str());
  return Status();
}

}  // namespace

int serve(const std::vector<std::string>& args) {
  ServeArgs a;
  const std::string bad = parse(args, a);
  if (!bad.empty()) return fail("bench --serve: " + bad);
  auto loaded = Session::load(a.model, a.options);
  if (!loaded.ok()) return fail(loaded.status().to_string());
  std::unique_ptr<Session> s = std::move(*loaded);
  TensorMap in = s->seeded_inputs(0);
  for (const auto& [name, path] : a.inputs) {
    auto t = read_npy(path);
    if (!t.ok()) return fail(path + ": " + t.status().to_string());
    if (!in.count(name)) return fail("--input " + name + ": the model has no input of that name");
    in[name] = *t;
  }
  const SessionStats& st = s->stats();
  std::printf("{\"ready\": true, \"kernels\": %lld, \"peak_activation_bytes\": %lld, \"weight_bytes\": %lld}\n",
              static_cast<long long>(st.kernels), static_cast<long long>(st.peak_activation_bytes),
              static_cast<long long>(st.weight_bytes));
  std::fflush(stdout);
  std::string line;
  TensorMap last;
  while (std::getline(std::cin, line)) {
    if (line == "run") {
      const auto t0 = std::chrono::steady_clock::now();
      auto out = s->run(in);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!out.ok()) return fail(out.status().to_string());
      last = std::move(*out);
      std::printf("%.6f\n", ms);
    } else if (line.rfind("output ", 0) == 0) {
      if (last.empty()) {
        auto out = s->run(in);
        if (!out.ok()) return fail(out.status().to_string());
        last = std::move(*out);
      }
      const std::string& name = s->graph().value(s->graph().outputs[0]).name;
      Status w = write_npy(line.substr(7), last.at(name));
      std::printf("%s\n", w.ok() ? "ok" : ("error: " + json_escape(w.to_string())).c_str());
    } else if (line == "stats") {
      std::printf("{\"peak_rss_kb\": %ld, \"kernels\": %lld, \"peak_activation_bytes\": %lld}\n", peak_rss_kb(),
                  static_cast<long long>(st.kernels), static_cast<long long>(st.peak_activation_bytes));
    } else if (line == "profile") {
      Status st = print_profile(*s, in);
      if (!st.ok()) return fail(st.to_string());
    } else if (line == "quit") {
      break;
    } else {
      std::printf("error: unknown command '%s' (run, output PATH, stats, profile, quit)\n", json_escape(line).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace fusert::bench
