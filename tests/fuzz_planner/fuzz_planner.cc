// fuzz_planner: the differential planner fuzzer. For each generated graph (graph_gen.h) it runs
// every fusion mode on seeded weights and inputs and compares every graph output with the
// graph as written (`--fusion raw`: the CPU reference kernels, one per node): relative L2 <= 1e-5 over
// the finite elements and NaN/Inf in the same places. A failing graph is shrunk (motifs dropped
// while it still fails) and written as a YAML file with its seed, ready to be a regression test.
// Each graph runs in a child process, so a crash or a sanitizer abort is a failure of that
// graph (and shrinks like one) instead of the end of the run. Each graph is also given a zero-size
// batch (unfused, and planned at another batch with its symbolic dim): fusert's dims are >= 1, so
// the run must fail with an error naming the input, never crash or return. A QDQ network (family
// qdq) is checked to the bit across modes instead (fuzz_check_qdq.cc). The checks: fuzz_check.cc.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "kernels/cpu/onednn.h"
#include "runtime/session.h"
#include "tests/fuzz_planner/fuzz_check.h"
#include "tests/fuzz_planner/graph_gen.h"

namespace fs = std::filesystem;
using namespace fusert;
using namespace fusert::fuzz;

namespace {

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
  static const std::string p =
      (fs::temp_directory_path() / ("fuzz_planner_" + std::to_string(::getpid()) + ".yaml")).string();
  return p;
}

// check_model in a child process: a crash becomes a failure text instead of ending the run.
std::string check_isolated(const std::string& yaml, int threads, bool fork_each) {
  {
    std::ofstream f(scratch_path());
    f << yaml;
  }
  if (!fork_each) return check_model(scratch_path(), threads);
  const Counts before = g_counts;
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string why = check_model(scratch_path(), threads);
    // "#counts o w u\n" first, then the failure text (empty when the graph passed).
    why = "#counts " + std::to_string(g_counts.outputs - before.outputs) + " " +
          std::to_string(g_counts.widened - before.widened) + " " +
          std::to_string(g_counts.unjudged - before.unjudged) + " " + std::to_string(g_counts.blocks - before.blocks) +
          " " + std::to_string(g_counts.symbolic - before.symbolic) + " " +
          std::to_string(g_counts.zero - before.zero) + " " + std::to_string(g_counts.qdq - before.qdq) + "\n" + why;
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
  if (why.rfind("#counts ", 0) == 0) {
    std::istringstream head(why.substr(8, why.find('\n') - 8));
    Counts c;
    head >> c.outputs >> c.widened >> c.unjudged >> c.blocks >> c.symbolic >> c.zero >> c.qdq;
    g_counts.outputs += c.outputs, g_counts.widened += c.widened, g_counts.unjudged += c.unjudged;
    g_counts.blocks += c.blocks;
    g_counts.symbolic += c.symbolic;
    g_counts.zero += c.zero;
    g_counts.qdq += c.qdq;
    why = why.substr(why.find('\n') + 1);
  }
  if (WIFSIGNALED(status))
    return "crashed with signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return "child exited with status " + std::to_string(WEXITSTATUS(status));
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
      for (const auto& e : fs::directory_iterator(p))
        if (e.path().extension() == ".yaml") files.push_back(e.path().string());
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
  std::cout << "fuzz_planner replay: " << files.size() << " regression graphs x 2 thread counts; outputs "
            << g_counts.outputs << " (" << g_counts.widened << " with a tolerance widened by their conditioning, "
            << g_counts.unjudged << " too ill-conditioned to judge)\n"
            << passed << " passed, " << failed << " failed\n";
  return failed ? 1 : 0;
}

void usage() {
  std::cout << "fuzz_planner [--graphs N] [--seed S] [--threads T] [--out DIR] [--max-failures K]\n"
               "             [--no-fork] [--no-shrink] [--print] [--replay FILE_OR_DIR ...]\n"
               "  Generates N random graphs (seeds S .. S+N-1), runs every fusion mode (none, vertical,\n"
               "  horizontal, cross, compound, all, profile-guided, all with the CUDA plan on CPU\n"
               "  kernels) and compares every output with --fusion raw (relative L2 <= 1e-5, NaN/Inf\n"
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
    if (a == "--graphs")
      o->graphs = std::stoll(next());
    else if (a == "--seed")
      o->seed = std::stoull(next());
    else if (a == "--threads")
      o->threads = std::stoi(next());
    else if (a == "--out")
      o->out = next();
    else if (a == "--max-failures")
      o->max_failures = std::stoi(next());
    else if (a == "--no-fork")
      o->fork_each = false;
    else if (a == "--no-shrink")
      o->shrink = false;
    else if (a == "--print")
      o->print = true;
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
            << nodes << " nodes, " << kModes.size() << " fused modes each, " << s << " s; outputs " << g_counts.outputs
            << " (" << g_counts.widened << " with a tolerance widened by their conditioning, " << g_counts.unjudged
            << " too ill-conditioned to judge); 1x1+depthwise groups formed: " << g_counts.blocks
            << "; run planned at another batch: " << g_counts.symbolic
            << " graphs; zero-size batches refused: " << g_counts.zero
            << "; QDQ networks equal to the bit: " << g_counts.qdq
            << (g_bf16 ? "; bf16 modes (none, all) checked" : "; bf16 modes skipped (no native bf16 on this CPU)")
            << "\n"
            << passed << " passed, " << failed << " failed\n";
  std::remove(scratch_path().c_str());
  return failed ? 1 : 0;
}
