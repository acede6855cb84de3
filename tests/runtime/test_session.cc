// Session end to end on tiny models written to a scratch directory: outputs checked by hand,
// statistics, weights sources (constants, a file, the model's own file, seeded), and the
// errors of load and run (each naming the tensor, file or option at fault).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "kernels/cpu/onednn.h"
#include "runtime/session.h"
#include "runtime/weights.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using fusert::test::check_message;
using fusert::test::f32_bits;
using fusert::test::scratch;
using fusert::test::write_file;

namespace {

// y = relu(x @ w^T + b) with x [1, 3], w [2, 3], b [2], all constants.
const char* kTiny = R"(fusert: 1
name: tiny
inputs: [{name: x, shape: [1, 3]}]
outputs: [y]
initializers:
  - {name: w, shape: [2, 3], value: [1, 2, 3, -1, 0, 1]}
  - {name: b, shape: [2], value: [0.5, -10]}
nodes:
  - {name: fc, op: Gemm, inputs: [x, w, b], outputs: [h], attrs: {transB: 1}}
  - {name: act, op: Relu, inputs: [h], outputs: [y]}
)";

// The same network with w and b as weights and a default weights file.
const char* kWithWeights = R"(fusert: 1
name: tinyw
inputs: [{name: x, shape: [1, 3]}]
outputs: [y]
weights: tinyw.safetensors
weights_fetch: "python3 tools/make_tinyw.py"
initializers:
  - {name: w, shape: [2, 3]}
  - {name: b, shape: [2]}
nodes:
  - {name: fc, op: Gemm, inputs: [x, w, b], outputs: [h], attrs: {transB: 1}}
  - {name: act, op: Relu, inputs: [h], outputs: [y]}
)";

std::string model_file(const std::string& name, const std::string& text) {
  std::string path = scratch(name);
  write_file(path, text);
  return path;
}

std::unique_ptr<Session> load_ok(const std::string& path, const SessionOptions& o = SessionOptions()) {
  auto s = Session::load(path, o);
  INFO(path);
  if (!s.ok()) FAIL("Session::load failed: " << s.status().to_string());
  return std::move(s).value();
}

std::string load_error(const std::string& path, const SessionOptions& o = SessionOptions()) {
  auto s = Session::load(path, o);
  REQUIRE_FALSE(s.ok());
  return s.status().message();
}

std::string run_error(Session& s, const TensorMap& inputs) {
  auto r = s.run(inputs);
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

}  // namespace

TEST_CASE("a tiny Gemm + Relu model runs end to end with hand-computed outputs") {
  auto s = load_ok(model_file("tiny.yaml", kTiny));
  // h = [1 + 4 + 9 + 0.5, -1 + 0 + 3 - 10] = [14.5, -8]; y = relu(h) = [14.5, 0].
  auto out = s->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
  REQUIRE(out.ok());
  REQUIRE(out->size() == 1);
  const Tensor& y = out->at("y");
  CHECK(y.shape() == Shape{1, 2});
  CHECK(y.f32()[0] == 14.5f);
  CHECK(y.f32()[1] == 0.f);
  // A second run with other inputs reuses the arena and gives fresh results.
  auto out2 = s->run({{"x", Tensor::f32({1, 3}, {0, 0, -1})}});
  REQUIRE(out2.ok());
  CHECK(out2->at("y").f32()[0] == 0.f);  // -3 + 0.5
  CHECK(out2->at("y").f32()[1] == 0.f);  // -1 - 10
  CHECK(y.f32()[0] == 14.5f);            // the first result is a separate tensor
  auto out3 = s->run({{"x", Tensor::f32({1, 3}, {0, 0, 20})}});
  REQUIRE(out3.ok());
  CHECK(out3->at("y").f32()[0] == 60.5f);  // 60 + 0.5
  CHECK(out3->at("y").f32()[1] == 10.f);   // 20 - 10
}

TEST_CASE("session statistics for the tiny model, counted by hand (unfused and fused)") {
  const std::string path = model_file("tiny_stats.yaml", kTiny);
  SessionOptions none;
  none.fusion = "none";
  auto s = load_ok(path, none);
  const SessionStats& st = s->stats();
  CHECK(st.nodes == 2);
  CHECK(st.kernels == 2);
  CHECK(st.intermediate_bytes == 2 * 8);               // h [1, 2] written once, read once
  CHECK(st.peak_activation_bytes == 2 * 64);           // x and h alive together; y reuses x's slot
  CHECK(st.naive_activation_bytes == 3 * 64);          // x, h, y in 64-byte slots
  CHECK(st.weights_source == "the model file's own");  // constants only: nothing was seeded
  CHECK(st.plan_ms >= 0.0);
  REQUIRE(s->plan().steps.size() == 2);
  // The Gemm runs on oneDNN by default (when built in), on our kernel with --cpu-kernels reference.
  CHECK(s->plan().steps[0].kernel == std::string(cpu::onednn::built() ? "onednn_gemm" : "gemm"));
  none.cpu_kernels = "reference";
  CHECK(load_ok(path, none)->plan().steps[0].kernel == "gemm");
  none.cpu_kernels = "mkl";
  auto bad = Session::load(path, none);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("cpu kernels: expected onednn or reference, got 'mkl'") != std::string::npos);
  CHECK(s->graph().name == "tiny");

  // The default fuses Gemm + Relu into one kernel: h is never written to memory.
  auto f = load_ok(path);
  CHECK(f->options().fusion == "all");
  CHECK(f->stats().kernels == 1);
  CHECK(f->stats().intermediate_bytes == 0);
  CHECK(f->stats().naive_activation_bytes == 2 * 64);  // x and y only
  auto out = f->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
  REQUIRE(out.ok());
  CHECK(out->at("y").f32()[0] == 14.5f);
  CHECK(out->at("y").f32()[1] == 0.f);
}

TEST_CASE("run rejects a missing, mis-shaped, mis-typed or unknown input, naming it") {
  auto s = load_ok(model_file("tiny_err.yaml", kTiny));
  check_message(run_error(*s, {}), {"missing input 'x' [1, 3]"});
  check_message(run_error(*s, {{"x", Tensor::f32({3}, {1, 2, 3})}}), {"input 'x': expected shape [1, 3], got [3]"});
  check_message(run_error(*s, {{"x", Tensor::f32({1, 4}, {1, 2, 3, 4})}}),
                {"input 'x': expected shape [1, 3], got [1, 4]"});
  check_message(run_error(*s, {{"x", Tensor(DType::kI64, {1, 3})}}), {"input 'x': expected dtype f32, got i64"});
  check_message(run_error(*s, {{"x", Tensor::f32({1, 3}, {1, 2, 3})}, {"z", Tensor::f32({1}, {0})}}),
                {"'z' is not an input of model 'tiny'"});
  check_message(run_error(*s, {{"x", Tensor::f32({1, 3}, {1, 2, 3})}, {"h", Tensor::f32({1, 2}, {0, 0})}}),
                {"'h' is not an input of model 'tiny'"});
  // After the errors, a good run still works.
  auto ok = s->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
  REQUIRE(ok.ok());
  CHECK(ok->at("y").f32()[0] == 14.5f);
}

TEST_CASE("seeded_inputs follow the input init kind (reference bits from tools/seeded_init.py)") {
  auto s = load_ok(model_file("tiny_seed.yaml", kTiny));
  TensorMap in = s->seeded_inputs(0);
  REQUIRE(in.count("x"));
  const Tensor& x = in.at("x");
  CHECK(x.shape() == Shape{1, 3});
  // The stream of name "x", seed 0, range [-1, 1): the first values of seeded "x" [13].
  CHECK(f32_bits(x.f32()[0]) == 0xbf18fb3au);
  CHECK(f32_bits(x.f32()[1]) == 0x3f1df738u);
  CHECK(f32_bits(x.f32()[2]) == 0x3e92c36eu);
  auto out = s->run(in);
  REQUIRE(out.ok());
  // y0 = relu(x0 + 2 x1 + 3 x2 + 0.5), from the seeded values themselves.
  double h0 = x.f32()[0] + 2.0 * x.f32()[1] + 3.0 * x.f32()[2] + 0.5;
  CHECK(out->at("y").f32()[0] == doctest::Approx(std::max(h0, 0.0)).epsilon(1e-6));
}

TEST_CASE("weights: the model's own file (relative to the model), --weights, --seeded, and a missing file") {
  const std::string dir = scratch("wdir");
  std::filesystem::create_directories(dir);
  const std::string model = dir + "/tinyw.yaml";
  write_file(model, kWithWeights);

  // Missing default weights file: names the file and the fetch command, suggests --seeded.
  std::string msg = load_error(model);
  check_message(msg, {dir + "/tinyw.safetensors: weights file of model 'tinyw' not found",
                      "create it with: python3 tools/make_tinyw.py", "--seeded"});

  // Seeded weights run without the file.
  SessionOptions seeded;
  seeded.seeded = true;
  seeded.seed = 3;
  auto s = load_ok(model, seeded);
  CHECK(s->stats().weights_source == "seeded (seed 3)");
  Tensor w = seeded_tensor("w", {2, 3}, InitKind::kKaiming, 3);
  Tensor b = seeded_tensor("b", {2}, InitKind::kUniform, 3);
  auto out = s->run({{"x", Tensor::f32({1, 3}, {1, 0, 0})}});
  REQUIRE(out.ok());
  CHECK(out->at("y").f32()[0] == doctest::Approx(std::max(w.f32()[0] + b.f32()[0], 0.f)));
  CHECK(out->at("y").f32()[1] == doctest::Approx(std::max(w.f32()[3] + b.f32()[1], 0.f)));

  // The model's own file, once it exists, relative to the model's directory.
  REQUIRE(write_safetensors(dir + "/tinyw.safetensors",
                            {{"w", Tensor::f32({2, 3}, {1, 2, 3, -1, 0, 1})}, {"b", Tensor::f32({2}, {0.5f, -10.f})}})
              .ok());
  auto own = load_ok(model);
  CHECK(own->stats().weights_source == dir + "/tinyw.safetensors");
  auto y = own->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
  REQUIRE(y.ok());
  CHECK(y->at("y").f32()[0] == 14.5f);

  // An explicit weights file wins over the model's.
  std::string other = scratch("other_w.safetensors");
  REQUIRE(
      write_safetensors(other, {{"w", Tensor::f32({2, 3}, {0, 0, 0, 0, 0, 1})}, {"b", Tensor::f32({2}, {1, 2})}}).ok());
  SessionOptions explicit_w;
  explicit_w.weights = other;
  auto ex = load_ok(model, explicit_w);
  auto y2 = ex->run({{"x", Tensor::f32({1, 3}, {1, 2, 3})}});
  REQUIRE(y2.ok());
  CHECK(y2->at("y").f32()[0] == 1.f);
  CHECK(y2->at("y").f32()[1] == 5.f);

  // An explicit weights file that does not exist is an error naming it (no fetch hint).
  SessionOptions gone;
  gone.weights = scratch("gone.safetensors");
  std::string gmsg = load_error(model, gone);
  check_message(gmsg, {scratch("gone.safetensors") + ": cannot open weights file"});
  CHECK(gmsg.find("create it with") == std::string::npos);

  // A file with the wrong tensors lists them.
  SessionOptions bad;
  bad.weights = scratch("bad_w.safetensors");
  REQUIRE(
      write_safetensors(bad.weights, {{"w", Tensor::f32({3, 2}, {0, 0, 0, 0, 0, 0})}, {"extra", Tensor::f32({1}, {0})}})
          .ok());
  check_message(load_error(model, bad),
                {"3 weight problem(s) for model 'tinyw'", "wrong shape: 'w'", "missing: 'b'", "extra: 'extra'"});
}

TEST_CASE("Session::load rejects bad options and bad model files") {
  const std::string model = model_file("tiny_opts.yaml", kTiny);
  SessionOptions fusion;
  fusion.fusion = "vertical,diagonal";
  check_message(load_error(model, fusion), {"--fusion: unknown fusion strategy 'diagonal'"});
  SessionOptions device;
  device.device = "tpu";
  check_message(load_error(model, device), {"unknown device 'tpu' (cpu, cuda)"});
  SessionOptions threads;
  threads.threads = -2;
  check_message(load_error(model, threads), {"threads must be in 0..1024 (0: all cores), got -2"});
  check_message(load_error(scratch("nope.yaml")), {scratch("nope.yaml") + ": cannot open model file"});
  const std::string broken = model_file("broken.yaml", "fusert: 1\nname: b\ninputs: [{name: x, shape: [1]]\n");
  check_message(load_error(broken), {broken + ":3:30: malformed YAML"});
}

TEST_CASE("--device cuda without a usable GPU fails with a message about CUDA") {
  if (check_cuda_device().ok()) {
    MESSAGE("a CUDA device is usable here; the no-GPU error path is not exercised");
    return;
  }
  SessionOptions o;
  o.device = "cuda";
  auto s = Session::load(model_file("tiny_cuda.yaml", kTiny), o);
  REQUIRE_FALSE(s.ok());
  check_message(s.status().message(), {"--device cuda: ", "use --device cpu"});
  CHECK((s.status().code() == StatusCode::kDeviceError || s.status().code() == StatusCode::kUnsupported));
}

TEST_CASE("Status and Result basics used across module boundaries") {
  Status ok;
  CHECK(ok.ok());
  Status e = error(StatusCode::kNotFound) << "x" << 1;
  CHECK_FALSE(e.ok());
  CHECK(e.message() == "x1");
  CHECK(e.to_string().find("x1") != std::string::npos);
  Result<int> r = Status();  // an ok Status cannot make a Result: it becomes an internal error
  CHECK_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInternal);
  Result<int> v = 5;
  CHECK(v.ok());
  CHECK(*v == 5);
}
