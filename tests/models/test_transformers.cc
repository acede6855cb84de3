// Transformer models against PyTorch / Hugging Face references (tools/make_transformer_goldens.py):
// seeded models by relative L2 <= 1e-4; all-MiniLM-L6-v2 on its real weights per text by cosine
// >= 0.99999 and max abs diff <= 1e-4, fed the reference tokenizer's ids (models/golden/minilm_l6.*).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/preprocess/tokenizer.h"
#include "graph/base/tensor.h"
#include "runtime/npy.h"
#include "runtime/session.h"

using namespace fusert;

namespace {

const std::string kRoot = FUSERT_SOURCE_DIR;
const std::string kGolden = kRoot + "/models/golden/";

Tensor golden(const std::string& file) {
  auto t = read_npy(kGolden + file);
  REQUIRE_MESSAGE(t.ok(), t.status().to_string());
  return *t;
}

std::unique_ptr<Session> load(const std::string& model, bool seeded) {
  SessionOptions opt;
  opt.seeded = seeded;
  auto s = Session::load(kRoot + "/models/" + model + ".yaml", opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(*s);
}

TensorMap run(Session& s, const TensorMap& inputs) {
  auto out = s.run(inputs);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  return *out;
}

void check_rel_l2(const std::string& what, const Tensor& y, const Tensor& ref) {
  REQUIRE(y.dtype() == DType::kF32);
  REQUIRE(y.numel() == ref.numel());
  double rel = relative_l2(y, ref);
  MESSAGE(what << ": relative L2 = " << rel << ", max abs diff = " << max_abs_diff(y, ref));
  CHECK(rel <= 1e-4);
}

// Rows [row * n, (row + 1) * n) of a float tensor, as a tensor of `shape`.
Tensor f32_rows(const Tensor& t, int64_t row, const Shape& shape) {
  int64_t n = shape_numel(shape);
  REQUIRE((row + 1) * n <= t.numel());
  return Tensor::f32(shape, std::vector<float>(t.f32() + row * n, t.f32() + (row + 1) * n));
}

Tensor i64_row(const Tensor& t, int64_t row, int64_t n) {
  Tensor r(DType::kI64, {1, n});
  std::memcpy(r.i64(), t.i64() + row * n, static_cast<size_t>(n) * sizeof(int64_t));
  return r;
}

}  // namespace

TEST_CASE("transformer_block (pre-LN block, seeded) matches the torch reference") {
  auto s = load("transformer_block", true);
  TensorMap out = run(*s, s->seeded_inputs(0));
  check_rel_l2("transformer_block", out.at("y"), golden("transformer_block.seeded.npy"));
}

TEST_CASE("bert_base_layer (seeded) matches Hugging Face BertLayer with a padding mask") {
  auto s = load("bert_base_layer", true);
  TensorMap in = s->seeded_inputs(0);  // hidden_states = seeded_tensor("hidden_states", ..., "input")
  // The mask rule of bert_base_layer.seeded.json: 100 real tokens, the last 28 are padding.
  Tensor mask(DType::kF32, {1, 128});
  for (int64_t t = 0; t < 128; ++t) mask.f32()[t] = t < 100 ? 1.0f : 0.0f;
  Tensor stored = golden("bert_base_layer.attention_mask.npy");
  REQUIRE(stored.shape() == mask.shape());
  REQUIRE(max_abs_diff(mask, stored) == 0.0);
  in["attention_mask"] = mask;
  TensorMap out = run(*s, in);
  check_rel_l2("bert_base_layer", out.at("layer_output"), golden("bert_base_layer.seeded.npy"));
}

TEST_CASE("multitask_heads (seeded): each of the 4 heads matches the torch reference") {
  auto s = load("multitask_heads", true);
  TensorMap out = run(*s, s->seeded_inputs(0));
  Tensor ref = golden("multitask_heads.seeded.npy");  // [4, 8, 64]: the heads stacked
  REQUIRE(ref.shape() == Shape{4, 8, 64});
  for (int64_t h = 0; h < 4; ++h) {
    std::string name = "heads." + std::to_string(h) + ".out";
    CAPTURE(name);
    check_rel_l2("multitask_heads " + name, out.at(name), f32_rows(ref, h, {8, 64}));
  }
}

TEST_CASE("minilm_l6 (real weights): sentence embeddings match sentence-transformers") {
  const std::string weights = kRoot + "/.cache/minilm/model.safetensors";
  if (!std::ifstream(weights).good()) {
    FAIL("missing " << weights << ": run `make weights` (python3 tools/fetch_minilm.py)");
  }
  std::ifstream jf(kGolden + "minilm_l6.texts.json");
  REQUIRE(jf.good());
  nlohmann::json doc = nlohmann::json::parse(jf);
  Tensor ids = golden("minilm_l6.input_ids.npy");
  Tensor masks = golden("minilm_l6.attention_mask.npy");
  Tensor embeddings = golden("minilm_l6.embeddings.npy");
  const int64_t n = static_cast<int64_t>(doc["texts"].size()), seq = doc["seq"].get<int64_t>();
  REQUIRE(n >= 30);
  REQUIRE(ids.dtype() == DType::kI64);
  REQUIRE(masks.dtype() == DType::kI64);
  REQUIRE(ids.shape() == Shape{n, seq});
  REQUIRE(masks.shape() == Shape{n, seq});
  REQUIRE(embeddings.shape() == Shape{n, 384});

  auto s = load("minilm_l6", false);  // the model's weights: .cache/minilm/model.safetensors
  // End to end: our tokenizer must produce the reference's ids for every golden text, so the
  // embeddings below are what `infer --text` computes.
  auto tok = WordPieceTokenizer::load(s->model().tokenizer_vocab);
  REQUIRE_MESSAGE(tok.ok(), tok.status().to_string());
  double worst_cos = 1.0, worst_abs = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    const std::string text = doc["texts"][static_cast<size_t>(k)]["text"].get<std::string>().substr(0, 80);
    CAPTURE(k);
    CAPTURE(text);  // first 80 bytes
    auto enc =
        tok->encode(doc["texts"][static_cast<size_t>(k)]["text"].get<std::string>(), s->model().tokenizer_max_length);
    REQUIRE(enc.ok());
    std::vector<int64_t> padded(static_cast<size_t>(seq), 0);
    std::copy(enc->ids.begin(), enc->ids.end(), padded.begin());
    CHECK(std::equal(padded.begin(), padded.end(), ids.i64() + k * seq));
    TensorMap out = run(*s, {{"input_ids", i64_row(ids, k, seq)}, {"attention_mask", i64_row(masks, k, seq)}});
    const Tensor& y = out.at("sentence_embedding");
    REQUIRE(y.shape() == Shape{1, 384});
    Tensor ref = f32_rows(embeddings, k, {1, 384});
    double dot = 0, yy = 0, rr = 0;
    for (int64_t i = 0; i < 384; ++i) {
      dot += static_cast<double>(y.f32()[i]) * ref.f32()[i];
      yy += static_cast<double>(y.f32()[i]) * y.f32()[i];
      rr += static_cast<double>(ref.f32()[i]) * ref.f32()[i];
    }
    double cosine = dot / std::sqrt(yy * rr), abs_diff = max_abs_diff(y, ref);
    worst_cos = std::min(worst_cos, cosine);
    worst_abs = std::max(worst_abs, abs_diff);
    CHECK(cosine >= 0.99999);
    CHECK(abs_diff <= 1e-4);
  }
  MESSAGE("minilm_l6 over " << n << " texts: worst 1 - cosine = " << 1.0 - worst_cos
                            << ", worst max abs diff = " << worst_abs);
}
