// Text inputs for sentence-embedding models.
#include "apps/infer/text.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "apps/preprocess/tokenizer.h"
#include "apps/preprocess/unicode_text.h"
#include "graph/base/file.h"
#include "runtime/npy.h"

namespace fusert::app {

Result<std::vector<std::string>> read_text_file(const std::string& path) {
  FUSERT_RETURN_IF_ERROR(check_regular_file(path, "text file"));
  std::ifstream f(path, std::ios::binary);
  if (!f) return error(StatusCode::kNotFound) << path << ": cannot open text file";

  std::vector<std::string> texts;
  std::string line;
  for (int n = 1; std::getline(f, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (auto d = decode_utf8(line); !d.ok()) {
      return error(StatusCode::kInvalidArgument) << path << ":" << n << ": not UTF-8: " << d.status().message();
    }
    texts.push_back(line);
  }
  if (texts.empty()) return error(StatusCode::kInvalidArgument) << path << ": no text lines";
  return texts;
}

namespace {

// How the model takes texts: batch and sequence length fixed or symbolic (Session::inputs).
struct TextShape {
  int64_t batch = 1;    // most texts per run
  int64_t seq = 0;      // fixed sequence length; 0 when symbolic (pad to each batch's longest)
  int64_t max_len = 0;  // tokens per text incl. [CLS]/[SEP]
};

Result<TextShape> text_shape(const Session& s, int batch_size) {
  const Graph& g = s.graph();
  for (const Session::TensorInfo& in : s.inputs()) {
    if (in.name != "input_ids" && in.name != "attention_mask") continue;
    if (in.dtype != DType::kI64 || in.dims.size() != 2) break;
    if (in.name == "attention_mask") continue;
    TextShape t;
    const Session::Dim& b = in.dims[0];
    const Session::Dim& q = in.dims[1];
    if (b.symbol.empty() && b.value != 1) break;
    t.batch = b.symbol.empty() ? 1 : std::min<int64_t>(batch_size, b.max);
    t.seq = q.symbol.empty() ? q.value : 0;
    const int64_t cap = q.symbol.empty() ? q.value : q.max;
    t.max_len = s.model().tokenizer_max_length > 0 ? std::min(s.model().tokenizer_max_length, cap) : cap;
    if (s.model().tokenizer_vocab.empty())
      return error(StatusCode::kInvalidArgument) << "--text: model '" << g.name << "' declares no tokenizer";
    return t;
  }
  return error(StatusCode::kInvalidArgument) << "--text: model '" << g.name
                                             << "' has no i64 inputs 'input_ids' and 'attention_mask' of shape "
                                                "[1 or batch, S]";
}

void progress(size_t done, size_t total) {
  const int width = 30, filled = static_cast<int>(width * done / std::max<size_t>(total, 1));
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu texts", filled, "##############################", width - filled, "", done,
               total);
  if (done == total) std::fputc('\n', stderr);
}

void print_similarity(const std::vector<std::vector<float>>& emb) {
  std::printf("cosine similarity:\n      ");
  for (size_t j = 0; j < emb.size(); ++j) std::printf("%8zu", j + 1);
  std::printf("\n");
  for (size_t i = 0; i < emb.size(); ++i) {
    std::printf("%6zu", i + 1);
    for (size_t j = 0; j < emb.size(); ++j) {
      double dot = 0, ni = 0, nj = 0;
      for (size_t k = 0; k < emb[i].size(); ++k) {
        dot += static_cast<double>(emb[i][k]) * emb[j][k];
        ni += static_cast<double>(emb[i][k]) * emb[i][k];
        nj += static_cast<double>(emb[j][k]) * emb[j][k];
      }
      std::printf("%8.4f", dot / std::max(std::sqrt(ni * nj), 1e-30));
    }
    std::printf("\n");
  }
}

// One batch of encoded texts (enc[order[first..first+b)]) padded to `len` (or the model's fixed
// seq), run; each text's row of the first output into emb.
Status run_batch(Session& s, const std::vector<Encoding>& enc, const std::vector<size_t>& order, size_t first, size_t b,
                 int64_t len, const std::string& out_name, std::vector<std::vector<float>>* emb) {
  Tensor ids(DType::kI64, {static_cast<int64_t>(b), len}), mask(DType::kI64, {static_cast<int64_t>(b), len});
  for (size_t k = 0; k < b; ++k) {  // zero-initialised: [PAD] = 0 with mask 0
    const Encoding& e = enc[order[first + k]];
    std::copy(e.ids.begin(), e.ids.end(), ids.i64() + static_cast<int64_t>(k) * len);
    std::copy(e.attention_mask.begin(), e.attention_mask.end(), mask.i64() + static_cast<int64_t>(k) * len);
  }
  FUSERT_ASSIGN_OR_RETURN(TensorMap out, s.run({{"input_ids", ids}, {"attention_mask", mask}}));
  const Tensor& y = out.at(out_name);
  if (y.shape().empty() || y.shape()[0] != static_cast<int64_t>(b)) {
    return error(StatusCode::kInvalidArgument) << "--text: output '" << out_name << "' " << shape_str(y.shape())
                                               << " is not one row per text of the batch of " << b;
  }
  const int64_t dim = y.numel() / static_cast<int64_t>(b);
  for (size_t k = 0; k < b; ++k)
    (*emb)[order[first + k]].assign(y.f32() + static_cast<int64_t>(k) * dim,
                                    y.f32() + (static_cast<int64_t>(k) + 1) * dim);
  return Status();
}

// A few texts: each embedding's dim, norm and first values.
void print_embeddings(const std::vector<std::string>& texts, const std::vector<Encoding>& enc,
                      const std::vector<std::vector<float>>& emb) {
  for (size_t t = 0; t < texts.size(); ++t) {
    double norm = 0;
    for (float x : emb[t]) norm += static_cast<double>(x) * x;
    std::printf("text %zu (%zu tokens): dim %zu, norm %.6f, first [", t + 1, enc[t].ids.size(), emb[t].size(),
                std::sqrt(norm));
    for (size_t i = 0; i < std::min<size_t>(5, emb[t].size()); ++i) std::printf("%s%.5f", i ? ", " : "", emb[t][i]);
    std::printf(" ...]  \"%.60s%s\"\n", texts[t].c_str(), texts[t].size() > 60 ? "..." : "");
  }
}

// The first pass end to end (tokenizer, batching, plans for new shapes); with --runs N > 1 the
// median of the later passes (shapes planned).
void print_throughput(const Session& s, size_t texts, int64_t tokens, int batches, int64_t batch,
                      const std::vector<double>& pass_ms) {
  const double ms = pass_ms[0];
  const SessionStats& st = s.stats();
  std::printf(
      "embedded %zu texts (%lld tokens) in %d batches of up to %lld, padded to each batch's longest: %.1f ms, "
      "%.1f texts/s, %.0f tokens/s; shapes planned %lld (%.1f ms), reused %lld\n",
      texts, static_cast<long long>(tokens), batches, static_cast<long long>(batch), ms,
      1000.0 * static_cast<double>(texts) / ms, 1000.0 * static_cast<double>(tokens) / ms,
      static_cast<long long>(st.shape_cache_misses), st.shape_build_ms_total,
      static_cast<long long>(st.shape_cache_hits));
  if (pass_ms.size() > 1) {
    std::vector<double> later(pass_ms.begin() + 1, pass_ms.end());
    std::sort(later.begin(), later.end());
    const double med = later[later.size() / 2];
    std::printf("later passes (%zu, shapes already planned): median %.1f ms, %.1f texts/s, %.0f tokens/s\n",
                later.size(), med, 1000.0 * static_cast<double>(texts) / med,
                1000.0 * static_cast<double>(tokens) / med);
  }
}

// --output: every embedding, [n, dim] float32, in input order.
Status write_embeddings(const std::string& path, const std::vector<std::vector<float>>& emb) {
  const int64_t dim = static_cast<int64_t>(emb[0].size());
  Tensor all(DType::kF32, {static_cast<int64_t>(emb.size()), dim});
  for (size_t t = 0; t < emb.size(); ++t)
    std::copy(emb[t].begin(), emb[t].end(), all.f32() + static_cast<int64_t>(t) * dim);
  FUSERT_RETURN_IF_ERROR(write_npy(path, all));
  std::printf("wrote %s [%zu, %lld] float32, in input order\n", path.c_str(), emb.size(), static_cast<long long>(dim));
  return Status();
}

}  // namespace

Status run_texts(Session& s, const std::vector<std::string>& texts, const TextRunOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  FUSERT_ASSIGN_OR_RETURN(TextShape shape, text_shape(s, o.batch_size));
  FUSERT_ASSIGN_OR_RETURN(WordPieceTokenizer tok, WordPieceTokenizer::load(s.model().tokenizer_vocab));
  std::vector<Encoding> enc;
  int64_t tokens = 0;
  for (size_t t = 0; t < texts.size(); ++t) {
    auto e = tok.encode(texts[t], shape.max_len);
    if (!e.ok()) return error(e.status().code()) << "text " << t + 1 << ": " << e.status().message();
    tokens += static_cast<int64_t>(e->ids.size());
    enc.push_back(std::move(*e));
  }
  // Longest first, so that each batch pads to a length close to all of its texts.
  std::vector<size_t> order(texts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return enc[a].ids.size() > enc[b].ids.size(); });
  const std::string out_name = s.graph().value(s.graph().outputs[0]).name;
  const bool bar = texts.size() > 100 && isatty(STDERR_FILENO);
  std::vector<std::vector<float>> emb(texts.size());
  int batches = 0;
  std::vector<double> pass_ms;  // the first pass includes tokenizing and planning new shapes
  auto tp = std::chrono::steady_clock::now();
  for (int r = 0; r < std::max(o.runs, 1); ++r) {
    batches = 0;
    for (size_t first = 0; first < order.size(); first += static_cast<size_t>(shape.batch)) {
      const size_t b = std::min(order.size() - first, static_cast<size_t>(shape.batch));
      const int64_t len = shape.seq > 0 ? shape.seq : static_cast<int64_t>(enc[order[first]].ids.size());
      FUSERT_RETURN_IF_ERROR(run_batch(s, enc, order, first, b, len, out_name, &emb));
      ++batches;
      if (bar) progress(first + b, order.size());
    }
    const auto now = std::chrono::steady_clock::now();
    pass_ms.push_back(std::chrono::duration<double, std::milli>(now - (r == 0 ? t0 : tp)).count());
    tp = now;
  }
  if (texts.size() <= 20) print_embeddings(texts, enc, emb);
  print_throughput(s, texts.size(), tokens, batches, shape.batch, pass_ms);
  if (texts.size() >= 2 && texts.size() <= 10) print_similarity(emb);
  if (!o.output.empty()) FUSERT_RETURN_IF_ERROR(write_embeddings(o.output, emb));
  return Status();
}

}  // namespace fusert::app
