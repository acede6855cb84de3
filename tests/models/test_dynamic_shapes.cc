// Symbolic dims on the zoo: a batch of N equals N runs of batch 1 (fused and unfused, N = 1, 3
// and the declared maximum), and all-MiniLM-L6-v2 on texts padded only to their batch's longest
// text equals sentence-transformers' embeddings (models/golden/minilm_l6.*).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "runtime/npy.h"
#include "runtime/session.h"

using namespace fusert;

namespace {

const std::string kRoot = FUSERT_SOURCE_DIR;

std::unique_ptr<Session> load(const std::string& model, const std::string& fusion, bool seeded = true) {
  SessionOptions opt;
  opt.seeded = seeded;
  opt.fusion = fusion;
  auto s = Session::load(kRoot + "/models/" + model + ".yaml", opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(*s);
}

// Item `k` (along dim 0) of every tensor in `m`, keeping a leading dim of 1.
TensorMap item(const TensorMap& m, int64_t k) {
  TensorMap out;
  for (const auto& [name, t] : m) {
    Shape s = t.shape();
    const size_t bytes = t.nbytes() / static_cast<size_t>(s[0]);
    s[0] = 1;
    Tensor r(t.dtype(), s);
    std::memcpy(r.raw(), static_cast<const uint8_t*>(t.raw()) + static_cast<size_t>(k) * bytes, bytes);
    out.emplace(name, r);
  }
  return out;
}

// max |a - b| / max |b| over item k of `batched` against `single` (one item).
double item_error(const Tensor& batched, int64_t k, const Tensor& single) {
  const int64_t n = single.numel();
  REQUIRE(batched.numel() >= (k + 1) * n);
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(batched.f32()[k * n + i]) - single.f32()[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(single.f32()[i])));
  }
  return diff / std::max(scale, 1e-30);
}

// Seeded batch of `n` (distinct items: the seeded values depend on the shape) through `s`,
// against each item run alone.
void check_batch(Session& s, const std::string& dim, int64_t n) {
  CAPTURE(n);
  TensorMap batch = s.seeded_inputs(7, {{dim, n}});
  auto out = s.run(batch);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  for (int64_t k = 0; k < n; ++k) {
    auto one = s.run(item(batch, k));
    REQUIRE_MESSAGE(one.ok(), one.status().to_string());
    for (const auto& [name, y] : *one) {
      CAPTURE(name);
      CAPTURE(k);
      REQUIRE(out->at(name).shape()[0] == n);
      CHECK(item_error(out->at(name), k, y) <= 1e-5);
    }
  }
}

}  // namespace

TEST_CASE("every zoo model: a batch of N equals N runs of batch 1, fused and unfused") {
  const std::vector<std::string> zoo = {"resnet18",           "resnet50",     "mobilenet_v2",    "mobilenet_v3_small",
                                        "efficientnet_lite0", "branch_merge", "multitask_heads", "transformer_block",
                                        "bert_base_layer",    "minilm_l6"};
  for (const std::string& m : zoo) {
    for (const char* fusion : {"all", "none"}) {
      CAPTURE(m);
      CAPTURE(fusion);
      auto s = load(m, fusion);
      const std::vector<Session::TensorInfo> ins = s->inputs();
      REQUIRE(!ins.empty());
      REQUIRE(ins[0].dims[0].symbol == "batch");
      const int64_t max = ins[0].dims[0].max;
      const std::vector<int64_t> sizes = {1, 3, std::min<int64_t>(max, m == "multitask_heads" ? 256 : 64)};
      for (int64_t n : sizes) check_batch(*s, "batch", n);
      CHECK(s->stats().shape_cache_misses >= 1);
    }
  }
}

TEST_CASE("transformer_block at several sequence lengths: batch 3 equals three batch-1 runs") {
  auto s = load("transformer_block", "all");
  for (int64_t seq : {1, 7, 64, 130}) {
    CAPTURE(seq);
    TensorMap batch = s->seeded_inputs(3, {{"batch", 3}, {"seq", seq}});
    auto out = s->run(batch);
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    REQUIRE(out->at("y").shape() == Shape{3, seq, 256});
    for (int64_t k = 0; k < 3; ++k) {
      auto one = s->run(item(batch, k));
      REQUIRE(one.ok());
      CHECK(item_error(out->at("y"), k, one->at("y")) <= 1e-5);
    }
  }
  // A shape seen before is a cache hit; the cache keeps at most shape_cache_size shapes.
  const int64_t misses = s->stats().shape_cache_misses;
  REQUIRE(s->run(s->seeded_inputs(3, {{"batch", 3}, {"seq", 7}})).ok());
  CHECK(s->stats().shape_cache_misses == misses);
  CHECK(s->stats().shape_build_ms_max > 0);
}

TEST_CASE("the shape cache evicts the least recently used shape") {
  SessionOptions opt;
  opt.seeded = true;
  opt.shape_cache_size = 2;
  auto s = Session::load(kRoot + "/models/branch_merge.yaml", opt);
  REQUIRE(s.ok());
  Session& ss = **s;
  auto run_at = [&](int64_t b) { REQUIRE(ss.run(ss.seeded_inputs(1, {{"batch", b}})).ok()); };
  run_at(2);
  run_at(3);
  run_at(2);  // hit; 3 is now the least recently used
  run_at(4);  // miss, evicts 3
  run_at(2);  // hit
  CHECK(ss.stats().shape_cache_misses == 3);
  run_at(3);  // evicted: a miss again
  CHECK(ss.stats().shape_cache_misses == 4);
  run_at(1);  // the opt point: always kept
  CHECK(ss.stats().shape_cache_misses == 4);
}

TEST_CASE("inputs and outputs describe the symbolic dims") {
  auto s = load("minilm_l6", "all");
  const auto ins = s->inputs();
  REQUIRE(ins.size() == 2);
  CHECK(ins[0].name == "input_ids");
  CHECK(ins[0].dtype == DType::kI64);
  REQUIRE(ins[0].dims.size() == 2);
  CHECK(ins[0].dims[0].symbol == "batch");
  CHECK(ins[0].dims[0].min == 1);
  CHECK(ins[0].dims[0].max == 64);
  CHECK(ins[0].dims[1].symbol == "seq");
  CHECK(ins[0].dims[1].value == 256);
  CHECK(ins[0].dims[1].max == 256);
  const auto outs = s->outputs();
  REQUIRE(outs.size() == 1);
  CHECK(outs[0].name == "sentence_embedding");
  REQUIRE(outs[0].dims.size() == 2);
  CHECK(outs[0].dims[0].symbol == "batch");
  CHECK(outs[0].dims[1].symbol.empty());
  CHECK(outs[0].dims[1].value == 384);
  auto r = load("resnet18", "all");
  CHECK(r->outputs()[0].dims[0].symbol == "batch");
  CHECK(r->outputs()[0].dims[1].value == 1000);
}

TEST_CASE("minilm_l6 (real weights): texts batched and padded to the batch's longest match the goldens") {
  const std::string weights = kRoot + "/.cache/minilm/model.safetensors";
  if (!std::ifstream(weights).good()) {
    FAIL("missing " << weights << ": run `make weights` (python3 tools/fetch_minilm.py)");
  }
  auto ids = read_npy(kRoot + "/models/golden/minilm_l6.input_ids.npy");
  auto masks = read_npy(kRoot + "/models/golden/minilm_l6.attention_mask.npy");
  auto emb = read_npy(kRoot + "/models/golden/minilm_l6.embeddings.npy");
  REQUIRE((ids.ok() && masks.ok() && emb.ok()));
  const int64_t n = ids->shape()[0], seq = ids->shape()[1];
  std::vector<int64_t> len(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t j = 0; j < seq; ++j) len[static_cast<size_t>(k)] += masks->i64()[k * seq + j];
  }
  REQUIRE(*std::max_element(len.begin(), len.end()) == seq);  // one text truncated at 256 tokens
  auto s = load("minilm_l6", "all", false);
  // Batches in file order (short and long texts mixed, the truncated one among them), of 5.
  double worst_cos = 1, worst_abs = 0;
  for (int64_t first = 0; first < n; first += 5) {
    const int64_t b = std::min<int64_t>(5, n - first);
    int64_t longest = 0;
    for (int64_t k = first; k < first + b; ++k) longest = std::max(longest, len[static_cast<size_t>(k)]);
    Tensor bi(DType::kI64, {b, longest}), bm(DType::kI64, {b, longest});
    for (int64_t k = 0; k < b; ++k) {
      std::memcpy(bi.i64() + k * longest, ids->i64() + (first + k) * seq, static_cast<size_t>(longest) * 8);
      std::memcpy(bm.i64() + k * longest, masks->i64() + (first + k) * seq, static_cast<size_t>(longest) * 8);
    }
    auto out = s->run({{"input_ids", bi}, {"attention_mask", bm}});
    REQUIRE_MESSAGE(out.ok(), out.status().to_string());
    const Tensor& y = out->at("sentence_embedding");
    REQUIRE(y.shape() == Shape{b, 384});
    for (int64_t k = 0; k < b; ++k) {
      double dot = 0, yy = 0, rr = 0, mx = 0;
      for (int64_t i = 0; i < 384; ++i) {
        const double a = y.f32()[k * 384 + i], r = emb->f32()[(first + k) * 384 + i];
        dot += a * r;
        yy += a * a;
        rr += r * r;
        mx = std::max(mx, std::fabs(a - r));
      }
      worst_cos = std::min(worst_cos, dot / std::sqrt(yy * rr));
      worst_abs = std::max(worst_abs, mx);
    }
  }
  MESSAGE("minilm_l6 batched by 5, padded to each batch's longest: worst 1 - cosine = " << 1 - worst_cos << ", max abs "
                                                                                        << worst_abs);
  CHECK(worst_cos >= 0.99999);
  CHECK(worst_abs <= 1e-4);
}

TEST_CASE("a run outside the declared dims is refused with the input, dim and range") {
  auto s = load("minilm_l6", "all");
  Tensor long_ids(DType::kI64, {1, 300}), mask(DType::kI64, {1, 300});
  auto out = s->run({{"input_ids", long_ids}, {"attention_mask", mask}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().code() == StatusCode::kShapeMismatch);
  CHECK(out.status().message().find("input 'input_ids' dim 1 ('seq') is 300, outside the range 1..256") == 0);
  Tensor a(DType::kI64, {2, 10}), b(DType::kI64, {3, 10});
  out = s->run({{"input_ids", a}, {"attention_mask", b}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() ==
        "input 'attention_mask' dim 0 ('batch') is 3 but input 'input_ids' dim 0 gives 'batch' = 2");
  auto r = load("resnet18", "all");
  out = r->run({{"input", Tensor(DType::kF32, {2, 3, 200, 224})}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() ==
        "input 'input' dim 2 is 200 but the model fixes it to 224 (expected shape [batch, 3, 224, 224])");
  out = r->run({{"input", Tensor(DType::kF32, {2, 3, 224})}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() == "input 'input': expected shape [batch, 3, 224, 224], got [2, 3, 224] (rank 3)");
}

TEST_CASE("infer --text-file --output (real weights): batched embeddings in input order match the goldens") {
  const std::string weights = kRoot + "/.cache/minilm/model.safetensors";
  if (!std::ifstream(weights).good()) {
    FAIL("missing " << weights << ": run `make weights` (python3 tools/fetch_minilm.py)");
  }
  std::ifstream jf(kRoot + "/models/golden/minilm_l6.texts.json");
  nlohmann::json doc = nlohmann::json::parse(jf);
  auto emb = read_npy(kRoot + "/models/golden/minilm_l6.embeddings.npy");
  REQUIRE(emb.ok());
  // One text per line (texts holding a line break are left out: a line is a text); the
  // truncated 2612-byte text is among them.
  std::vector<size_t> rows;
  const std::string dir = "/tmp/fusert_text_file_" + std::to_string(::getpid());
  const std::string in = dir + ".txt", out = dir + ".npy";
  {
    std::ofstream f(in, std::ios::binary);
    for (size_t k = 0; k < doc["texts"].size(); ++k) {
      const std::string t = doc["texts"][k]["text"].get<std::string>();
      if (t.find('\n') != std::string::npos || t.find('\r') != std::string::npos) continue;
      f << t << "\n";
      rows.push_back(k);
    }
  }
  REQUIRE(rows.size() >= 30);
  const std::string cmd = std::string(FUSERT_INFER_BIN) + " --model " + kRoot +
                          "/models/minilm_l6.yaml --batch-size 7 --text-file " + in + " --output " + out + " > " + dir +
                          ".log 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir + ".log");
  std::stringstream text;
  text << log.rdbuf();
  INFO(text.str());
  REQUIRE(rc == 0);
  CHECK(text.str().find("in 5 batches of up to 7, padded to each batch's longest") != std::string::npos);
  auto got = read_npy(out);
  std::remove(in.c_str());
  std::remove(out.c_str());
  std::remove((dir + ".log").c_str());
  REQUIRE(got.ok());
  REQUIRE(got->shape() == Shape{static_cast<int64_t>(rows.size()), 384});
  double worst_cos = 1, worst_abs = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    double dot = 0, yy = 0, rr = 0;
    for (int64_t i = 0; i < 384; ++i) {
      const double a = got->f32()[static_cast<int64_t>(r) * 384 + i];
      const double b = emb->f32()[static_cast<int64_t>(rows[r]) * 384 + i];
      dot += a * b, yy += a * a, rr += b * b;
      worst_abs = std::max(worst_abs, std::fabs(a - b));
    }
    worst_cos = std::min(worst_cos, dot / std::sqrt(yy * rr));
  }
  MESSAGE("infer --text-file over " << rows.size() << " texts: worst 1 - cosine " << 1 - worst_cos << ", max abs "
                                    << worst_abs);
  CHECK(worst_cos >= 0.99999);
  CHECK(worst_abs <= 1e-4);
}
