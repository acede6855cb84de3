// fuzz_planner: the differential planner fuzzer. For each generated graph (graph_gen.h) it runs
// every fusion mode on seeded weights and inputs and compares every graph output with the
// unfused plan (`--fusion none`: the CPU reference kernels, one per op): relative L2 <= 1e-5 over
// the finite elements and NaN/Inf in the same places. A failing graph is shrunk (motifs dropped
// while it still fails) and written as a YAML file with its seed, ready to be a regression test.
// Each graph runs in a child process, so a crash or a sanitizer abort is a failure of that
// graph (and shrinks like one) instead of the end of the run.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/session.h"
#include "tests/fuzz_planner/graph_gen.h"
#ifdef FUSERT_FUZZ_EMU
#include "tests/cuda_emu/emu.h"
#endif

namespace fs = std::filesystem;
using namespace fusert;

namespace {

struct Mode {
  const char* name;
  const char* fusion;
  bool profile = false;
  const char* plan_for = "";
  const char* device = "cpu";
};

// `none` is the reference; every other mode is compared with it.
const std::vector<Mode> kModes = {
    {"vertical", "vertical"}, {"horizontal", "horizontal"}, {"cross", "cross"},
    {"compound", "compound"}, {"all", "all"},             {"profile-guided", "all", true},
    {"all (cuda plan)", "all", false, "cuda"},
#ifdef FUSERT_FUZZ_EMU
    // The CUDA backend linked against tests/cuda_emu: real lowering, executor and library calls,
    // generated kernels run as their host references, allocations bounds-checked.
    {"cuda-emu none", "none", false, "", "cuda"}, {"cuda-emu all", "all", false, "", "cuda"},
#endif
};

constexpr double kTolerance = 1e-5;

struct Options {
  uint64_t seed = 1;
  int64_t graphs = 100;
  int threads = 0;  // 0: 1 or 2, alternating by seed
  std::string out = "fuzz-failures";
  std::vector<std::string> replay;
  int max_failures = 5;
  bool fork_each = true;
  bool shrink = true;
  bool print = false;
};

std::string scratch_path() {
  static const std::string p = (fs::temp_directory_path() / ("fuzz_planner_" + std::to_string(::getpid()) + ".yaml")).string();
  return p;
}

// Compares `got` with `want`; empty when they agree.
std::string compare(const TensorMap& want, const TensorMap& got) {
  std::ostringstream why;
  for (const auto& [name, w] : want) {
    auto it = got.find(name);
    if (it == got.end()) return "output '" + name + "' missing";
    const Tensor& g = it->second;
    if (g.shape() != w.shape()) return "output '" + name + "' shape " + shape_str(g.shape()) + " != " + shape_str(w.shape());
    double diff = 0, norm = 0, max_abs = 0;
    for (int64_t i = 0; i < w.numel(); ++i) {
      const float a = w.f32()[i], b = g.f32()[i];
      if (std::isnan(a) != std::isnan(b) || (std::isinf(a) && a != b) || (std::isinf(b) && a != b)) {
        why << "output '" << name << "' element " << i << ": " << b << " where the unfused plan has " << a;
        return why.str();
      }
      if (!std::isfinite(a)) continue;
      diff += (static_cast<double>(a) - b) * (static_cast<double>(a) - b);
      norm += static_cast<double>(a) * a;
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(a) - b));
    }
    const double rel = norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    if (!(rel <= kTolerance)) {
      why << "output '" << name << "' " << shape_str(w.shape()) << ": relative L2 " << rel << " > " << kTolerance
          << " (max abs diff " << max_abs << ")";
      return why.str();
    }
  }
  return "";
}

Result<std::unique_ptr<Session>> open(const std::string& path, const Mode* m, int threads) {
  SessionOptions o;
  o.seeded = true;
  o.threads = threads;
  o.fusion = m ? m->fusion : "none";
  if (m) o.profile_guided = m->profile, o.plan_for = m->plan_for, o.device = m->device;
  return Session::load(path, o);
}

// Runs every mode on the model at `path`; empty when all agree, else what failed first.
std::string check_model(const std::string& path, int threads) {
  auto ref = open(path, nullptr, threads);
  if (!ref.ok()) return "fusion none: load failed: " + ref.status().to_string();
  TensorMap in = (*ref)->seeded_inputs(7);
  auto want = (*ref)->run(in);
  if (!want.ok()) return "fusion none: run failed: " + want.status().to_string();
  for (const Mode& m : kModes) {
#ifdef FUSERT_FUZZ_EMU
    emu::clear_violations();
#endif
    auto s = open(path, &m, threads);
    if (!s.ok()) return std::string(m.name) + ": load failed: " + s.status().to_string();
    for (int rep = 0; rep < 2; ++rep) {  // twice: a stale or uninitialised buffer shows on the second run
      auto got = (*s)->run(in);
      if (!got.ok()) return std::string(m.name) + ": run failed: " + got.status().to_string();
      std::string why = compare(*want, *got);
      if (!why.empty()) return std::string(m.name) + (rep ? " (second run)" : "") + ": " + why;
    }
#ifdef FUSERT_FUZZ_EMU
    if (!emu::violations().empty()) return std::string(m.name) + ": emulation violation: " + emu::violations()[0];
#endif
  }
  return "";
}

// check_model in a child process: a crash becomes a failure text instead of ending the run.
std::string check_isolated(const std::string& yaml, int threads, bool fork_each) {
  {
    std::ofstream f(scratch_path());
    f << yaml;
  }
  if (!fork_each) return check_model(scratch_path(), threads);
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = check_model(scratch_path(), threads);
    ssize_t n = write(fds[1], why.data(), why.size());
    (void)n;
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string why;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) why.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "crashed with signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) return "child exited with status " + std::to_string(WEXITSTATUS(status));
  return why;
}

int threads_for(const Options& o, uint64_t seed) { return o.threads > 0 ? o.threads : 1 + static_cast<int>(seed % 2); }

// Drops motifs one at a time while the graph still fails; returns the smallest failing graph.
fuzz::GenGraph shrink(const Options& o, uint64_t seed, std::string* why) {
  std::set<int> skip;
  fuzz::GenGraph best = fuzz::generate(seed, skip);
  for (bool progress = true; progress;) {
    progress = false;
    for (int i = 0; i < static_cast<int>(best.motifs.size()); ++i) {
      if (skip.count(i)) continue;
      std::set<int> trial = skip;
      trial.insert(i);
      fuzz::GenGraph g = fuzz::generate(seed, trial);
      std::string w = check_isolated(g.yaml, threads_for(o, seed), o.fork_each);
      if (!w.empty()) {
        skip = trial, best = g, *why = w, progress = true;
      }
    }
  }
  return best;
}

void write_failure(const Options& o, uint64_t seed, const fuzz::GenGraph& g, const std::string& why) {
  fs::create_directories(o.out);
  std::string path = o.out + "/fuzz_" + std::to_string(seed) + ".yaml";
  std::ofstream f(path);
  f << "# failure: " << why << "\n# threads: " << threads_for(o, seed) << "\n" << g.yaml;
  std::cout << "  written: " << path << " (" << g.nodes << " nodes)\n";
}

int run_replay(const Options& o) {
  int failed = 0, passed = 0;
  std::vector<std::string> files;
  for (const std::string& p : o.replay) {
    if (fs::is_directory(p)) {
      for (const auto& e : fs::directory_iterator(p)) if (e.path().extension() == ".yaml") files.push_back(e.path().string());
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) {
    std::ifstream in(f);
    std::stringstream text;
    text << in.rdbuf();
    for (int threads : {1, 2}) {
      std::string why = check_isolated(text.str(), threads, o.fork_each);
      if (why.empty()) {
        ++passed;
      } else {
        ++failed;
        std::cout << "FAIL " << f << " (threads " << threads << "): " << why << "\n";
      }
    }
  }
  std::cout << "fuzz_planner replay: " << files.size() << " regression graphs x 2 thread counts\n"
            << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

void usage() {
  std::cout << "fuzz_planner [--graphs N] [--seed S] [--threads T] [--out DIR] [--max-failures K]\n"
               "             [--no-fork] [--no-shrink] [--print] [--replay FILE_OR_DIR ...]\n"
               "  Generates N random graphs (seeds S .. S+N-1), runs every fusion mode (vertical,\n"
               "  horizontal, cross, compound, all, profile-guided, all with the CUDA plan on CPU\n"
               "  kernels) and compares every output with --fusion none (relative L2 <= 1e-5, NaN/Inf\n"
               "  in the same places). Failures are shrunk and written to DIR (default fuzz-failures).\n"
               "  --print writes the YAML of seed S and exits; --replay checks existing YAML files.\n";
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--graphs") o->graphs = std::stoll(next());
    else if (a == "--seed") o->seed = std::stoull(next());
    else if (a == "--threads") o->threads = std::stoi(next());
    else if (a == "--out") o->out = next();
    else if (a == "--max-failures") o->max_failures = std::stoi(next());
    else if (a == "--no-fork") o->fork_each = false;
    else if (a == "--no-shrink") o->shrink = false;
    else if (a == "--print") o->print = true;
    else if (a == "--replay") {
      while (i + 1 < argc && argv[i + 1][0] != '-') o->replay.push_back(argv[++i]);
    } else if (a == "--help" || a == "-h") {
      usage();
      std::exit(0);
    } else {
      throw std::runtime_error("unknown argument '" + a + "'");
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Passive OpenMP waits: with spinning workers, forked children and a second fuzzer on the
  // other core slow each other down tenfold.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  Options o;
  try {
    parse(argc, argv, &o);
  } catch (const std::exception& e) {
    std::cerr << "fuzz_planner: " << e.what() << " (--help)\n";
    return 2;
  }
  if (o.print) {
    std::cout << fuzz::generate(o.seed).yaml;
    return 0;
  }
  if (!o.replay.empty()) return run_replay(o);
  auto t0 = std::chrono::steady_clock::now();
  int64_t passed = 0, failed = 0, nodes = 0;
  for (int64_t i = 0; i < o.graphs; ++i) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(i);
    fuzz::GenGraph g = fuzz::generate(seed);
    nodes += g.nodes;
    std::string why = check_isolated(g.yaml, threads_for(o, seed), o.fork_each);
    if (why.empty()) {
      ++passed;
    } else {
      ++failed;
      std::cout << "FAIL seed " << seed << " (" << g.family << ", " << g.nodes << " nodes): " << why << "\n";
      fuzz::GenGraph small = g;
      if (o.shrink) small = shrink(o, seed, &why);
      std::cout << "  shrunk: " << why << "\n";
      write_failure(o, seed, small, why);
      if (failed >= o.max_failures) break;
    }
    if ((i + 1) % 1000 == 0) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::cout << "[fuzz_planner] " << (i + 1) << " graphs, " << failed << " failed, " << s << " s\n" << std::flush;
    }
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "fuzz_planner: seeds " << o.seed << ".." << (o.seed + static_cast<uint64_t>(passed + failed) - 1) << ", "
            << nodes << " nodes, " << kModes.size() << " fused modes each, " << s << " s\n"
            << passed << " passed, " << failed << " failed\n";
  std::remove(scratch_path().c_str());
  return failed ? 1 : 0;
}
