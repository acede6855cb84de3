// Session::run from many threads (the guarantee in runtime/session.h): one session shared by 8
// threads x 100 runs, and 4 sessions with different thread counts side by side, every output
// bit-identical to the same session's run alone; no session changes a process-wide setting.
#include <doctest/doctest.h>

#include <omp.h>
#include <unistd.h>
#include <Eigen/Core>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "runtime/executor.h"
#include "runtime/session.h"
#include "runtime/weights.h"

using namespace fusert;

namespace {

const std::string kRoot = FUSERT_SOURCE_DIR;

// An embedding lookup (the Gather that once read indices another run was overwriting), sibling
// 1x1 convs (a horizontal conv, which once shared a scratch tile), a residual conv block and a
// Gemm + LayerNorm head: every kind of step that could keep state between runs.
const char* kMixed = R"(fusert: 1
name: mixed
inputs: [{name: ids, shape: [1, 16], dtype: i64}, {name: image, shape: [1, 4, 8, 8]}]
outputs: [tokens, image_out]
initializers:
  - {name: emb, shape: [32, 8]}
  - {name: ln.w, shape: [8], init: bn_scale}
  - {name: fc.w, shape: [8, 8]}
  - {name: fc.b, shape: [8]}
  - {name: a.w, shape: [4, 4, 1, 1]}
  - {name: b.w, shape: [4, 4, 1, 1]}
  - {name: c.w, shape: [4, 4, 3, 3]}
nodes:
  - {name: lookup, op: Gather, inputs: [emb, ids], outputs: [e]}
  - {name: flat, op: Reshape, inputs: [e], outputs: [ef], attrs: {shape: [16, 8]}}
  - {name: fc, op: Gemm, inputs: [ef, fc.w, fc.b], outputs: [f], attrs: {transB: 1}}
  - {name: gelu, op: Gelu, inputs: [f], outputs: [fg]}
  - {name: ln, op: LayerNormalization, inputs: [fg, ln.w], outputs: [tokens], attrs: {axis: -1}}
  - {name: stem, op: Relu, inputs: [image], outputs: [x]}
  - {name: a, op: Conv, inputs: [x, a.w], outputs: [ya], attrs: {kernel_shape: [1, 1]}}
  - {name: b, op: Conv, inputs: [x, b.w], outputs: [yb], attrs: {kernel_shape: [1, 1]}}
  - {name: ra, op: Relu, inputs: [ya], outputs: [za]}
  - {name: c, op: Conv, inputs: [za, c.w], outputs: [yc], attrs: {kernel_shape: [3, 3], pads: [1, 1, 1, 1]}}
  - {name: join, op: Add, inputs: [yc, yb], outputs: [s]}
  - {name: out, op: Relu, inputs: [s], outputs: [image_out]}
)";

std::string mixed_path() {
  static const std::string path = [] {
    std::string p =
        (std::filesystem::temp_directory_path() / ("fusert_concurrency_" + std::to_string(::getpid()) + ".yaml"))
            .string();
    std::ofstream(p) << kMixed;
    return p;
  }();
  return path;
}

// Distinct inputs per case so that one run's values leaking into another's shows.
TensorMap inputs_for(const Session& s, int k) {
  TensorMap in = s.seeded_inputs(static_cast<uint64_t>(k));
  for (auto& [name, t] : in) {
    if (t.dtype() != DType::kI64) continue;
    for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = (i * 7 + k * 5) % 32;
  }
  return in;
}

bool bit_identical(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, t] : a) {
    auto it = b.find(name);
    if (it == b.end() || it->second.shape() != t.shape() || it->second.nbytes() != t.nbytes()) return false;
    if (std::memcmp(it->second.raw(), t.raw(), t.nbytes()) != 0) return false;
  }
  return true;
}

std::unique_ptr<Session> load(const std::string& path, int threads, const std::string& fusion = "all") {
  SessionOptions o;
  o.seeded = true;
  o.threads = threads;
  o.fusion = fusion;
  auto s = Session::load(path, o);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(s.value());
}

constexpr int kCases = 4;

// Runs `runs` inferences on each of `threads` threads against `s`, input case (thread + run) %
// kCases, and counts the outputs that differ from `want` (the session's runs alone).
int hammer(Session& s, const std::vector<TensorMap>& in, const std::vector<TensorMap>& want, int threads, int runs) {
  std::atomic<int> wrong{0}, failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (int r = 0; r < runs; ++r) {
        const int k = (t + r) % kCases;
        auto out = s.run(in[static_cast<size_t>(k)]);
        if (!out.ok())
          ++failed;
        else if (!bit_identical(*out, want[static_cast<size_t>(k)]))
          ++wrong;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  CHECK(failed.load() == 0);
  return wrong.load();
}

void references(Session& s, std::vector<TensorMap>* in, std::vector<TensorMap>* want) {
  for (int k = 0; k < kCases; ++k) {
    in->push_back(inputs_for(s, k));
    auto out = s.run(in->back());
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    want->push_back(std::move(*out));
  }
}

}  // namespace

TEST_CASE("concurrency: one session from 8 threads x 100 runs is bit-identical to its runs alone") {
  for (const std::string& path : {mixed_path(), kRoot + "/models/transformer_block.yaml"}) {
    for (const char* fusion : {"none", "all"}) {
      CAPTURE(path);
      CAPTURE(fusion);
      auto s = load(path, 1, fusion);
      std::vector<TensorMap> in, want;
      references(*s, &in, &want);
      CHECK(hammer(*s, in, want, 8, 100) == 0);
      CHECK(s->execution_contexts() >= 1u);
      CHECK(s->execution_contexts() <= 8u);
    }
  }
}

TEST_CASE("concurrency: 4 sessions with different thread counts side by side never interfere") {
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::vector<TensorMap>> in(4), want(4);
  for (int i = 0; i < 4; ++i) {
    sessions.push_back(load(i % 2 ? mixed_path() : kRoot + "/models/transformer_block.yaml", i + 1));
    references(*sessions.back(), &in[static_cast<size_t>(i)], &want[static_cast<size_t>(i)]);
  }
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> pool;
  for (int i = 0; i < 4; ++i) {
    pool.emplace_back([&, i] {
      wrong[static_cast<size_t>(i)] =
          hammer(*sessions[static_cast<size_t>(i)], in[static_cast<size_t>(i)], want[static_cast<size_t>(i)], 2, 30);
    });
  }
  for (std::thread& th : pool) th.join();
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(wrong[static_cast<size_t>(i)] == 0);
  }
}

TEST_CASE("concurrency: no session changes a process-wide thread setting (sentinels survive)") {
  omp_set_num_threads(3);
  Eigen::setNbThreads(3);
  {
    auto one = load(mixed_path(), 1);
    auto two = load(kRoot + "/models/transformer_block.yaml", 2);
    std::vector<TensorMap> in1, want1, in2, want2;
    references(*one, &in1, &want1);
    references(*two, &in2, &want2);
    std::thread other([&] { CHECK(hammer(*two, in2, want2, 1, 5) == 0); });
    CHECK(hammer(*one, in1, want1, 1, 5) == 0);
    other.join();
    CHECK(omp_get_max_threads() == 3);
    CHECK(Eigen::nbThreads() == 3);
  }
  CHECK(omp_get_max_threads() == 3);
  CHECK(Eigen::nbThreads() == 3);
  Eigen::setNbThreads(0);  // back to "follow OpenMP" for the other test cases
  omp_set_num_threads(omp_get_num_procs());
}

namespace {

// A device that records how many runs are inside it at once, and copies input to output.
struct CountingDevice final : ExecDevice {
  size_t bound;
  int fail_creates;  // the first n create_context calls fail
  mutable std::atomic<int> inside{0}, most{0}, creates{0};
  CountingDevice(size_t b, int fail) : bound(b), fail_creates(fail) {}
  size_t max_contexts() const override { return bound; }
  Result<std::unique_ptr<ExecContext>> create_context() const override {
    if (creates++ < fail_creates) return error(StatusCode::kIoError) << "no memory for the arena (test)";
    return std::make_unique<ExecContext>();
  }
  Status run(ExecContext&, const std::vector<const Tensor*>& in, const std::vector<Tensor*>& out, std::vector<double>*,
             RunInfo* info) const override {
    int now = ++inside;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    std::memcpy(out[0]->raw(), in[0]->raw(), in[0]->nbytes());
    info->device_ms = 1.5;
    --inside;
    return Status();
  }
};

Graph copy_graph() {
  Graph g;
  g.name = "copy";
  ValueId x = g.add_value("x");
  g.value(x).shape = Shape{4};
  g.value(x).shape_known = true;
  g.value(x).is_graph_input = true;
  g.inputs.push_back(x);
  g.outputs.push_back(x);
  return g;
}

// Runs `runs` inferences on each of 6 threads; returns the number of wrong outputs.
int hammer(const ExecutorCore& core, int runs) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 6; ++t) {
    ts.emplace_back([&, t] {
      for (int r = 0; r < runs; ++r) {
        Tensor x(DType::kF32, Shape{4});
        for (int i = 0; i < 4; ++i) x.f32()[i] = static_cast<float>(t * 1000 + r * 10 + i);
        RunInfo info;
        auto out = core.run({{"x", x}}, nullptr, &info);
        if (!out.ok() || out->at("x").f32()[3] != x.f32()[3] || info.device_ms != 1.5) ++wrong;
      }
    });
  }
  for (auto& th : ts) th.join();
  return wrong.load();
}

}  // namespace

TEST_CASE(
    "concurrency: the executor core with one context serializes runs; an unbounded one gets one per run in flight") {
  Graph g = copy_graph();
  ExecutionPlan plan;
  plan.slots.resize(g.values.size());
  auto one = std::make_unique<CountingDevice>(1, 0);
  const CountingDevice* d1 = one.get();
  ExecutorCore serial(g, plan, std::move(one));
  CHECK(hammer(serial, 20) == 0);
  CHECK(d1->most.load() == 1);
  CHECK(serial.contexts() == 1);

  auto many = std::make_unique<CountingDevice>(0, 0);
  const CountingDevice* dn = many.get();
  ExecutorCore pooled(g, plan, std::move(many));
  CHECK(hammer(pooled, 20) == 0);
  CHECK(dn->most.load() > 1);  // 6 threads x 2 ms runs overlap
  CHECK(pooled.contexts() == static_cast<size_t>(dn->creates.load()));
  CHECK(pooled.contexts() <= 6);
}

TEST_CASE("concurrency: an execution context that cannot be created is an error, and the pool recovers") {
  Graph g = copy_graph();
  ExecutionPlan plan;
  plan.slots.resize(g.values.size());
  ExecutorCore core(g, plan, std::make_unique<CountingDevice>(1, 1));
  Tensor x(DType::kF32, Shape{4});
  auto first = core.run({{"x", x}});
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().message().find("no memory for the arena") != std::string::npos);
  CHECK(core.contexts() == 0);
  CHECK(core.run({{"x", x}}).ok());  // the bound was given back: no deadlock
  CHECK(core.contexts() == 1);
  auto bad = core.run({{"y", x}});  // checked by the core before any device work
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("missing input 'x'") != std::string::npos);
}
