// Text inputs for sentence-embedding models.
#include "apps/infer/text.h"

#include <cmath>
#include <cstdio>
#include <fstream>

#include "apps/preprocess/tokenizer.h"
#include "apps/preprocess/unicode_text.h"
#include "graph/base/file.h"

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

Status run_texts(Session& s, const std::vector<std::string>& texts, int runs) {
  const Graph& g = s.graph();
  ValueId ids = g.find_value("input_ids"), mask = g.find_value("attention_mask");
  if (ids == kNoValue || mask == kNoValue || !g.value(ids).is_graph_input || g.value(ids).dtype != DType::kI64 ||
      g.value(ids).shape.size() != 2 || g.value(ids).shape[0] != 1) {
    return error(StatusCode::kInvalidArgument)
           << "--text: model '" << g.name << "' has no i64 [1, S] inputs 'input_ids' and 'attention_mask'";
  }
  if (s.model().tokenizer_vocab.empty())
    return error(StatusCode::kInvalidArgument) << "--text: model '" << g.name << "' declares no tokenizer";
  FUSERT_ASSIGN_OR_RETURN(WordPieceTokenizer tok, WordPieceTokenizer::load(s.model().tokenizer_vocab));
  const int64_t seq = g.value(ids).shape[1];
  const int64_t max_len = s.model().tokenizer_max_length > 0 ? std::min(s.model().tokenizer_max_length, seq) : seq;
  std::vector<std::vector<float>> emb;
  for (size_t t = 0; t < texts.size(); ++t) {
    auto enc = tok.encode(texts[t], max_len);
    if (!enc.ok()) return error(enc.status().code()) << "text " << t + 1 << ": " << enc.status().message();
    const Encoding& e = *enc;
    Tensor id_t(DType::kI64, {1, seq}), mask_t(DType::kI64, {1, seq});
    for (size_t i = 0; i < e.ids.size(); ++i) {
      id_t.i64()[i] = e.ids[i];
      mask_t.i64()[i] = e.attention_mask[i];
    }
    TensorMap out;
    for (int r = 0; r < std::max(runs, 1); ++r) {
      FUSERT_ASSIGN_OR_RETURN(out, s.run({{"input_ids", id_t}, {"attention_mask", mask_t}}));
    }
    const Tensor& y = out.at(g.value(g.outputs[0]).name);
    std::vector<float> v(y.f32(), y.f32() + y.numel());
    double norm = 0;
    for (float x : v) norm += static_cast<double>(x) * x;
    std::printf("text %zu (%zu tokens): dim %lld, norm %.6f, first [", t + 1, e.ids.size(),
                static_cast<long long>(v.size()), std::sqrt(norm));
    for (size_t i = 0; i < std::min<size_t>(5, v.size()); ++i) std::printf("%s%.5f", i ? ", " : "", v[i]);
    std::printf(" ...]  \"%.60s%s\"\n", texts[t].c_str(), texts[t].size() > 60 ? "..." : "");
    emb.push_back(std::move(v));
  }
  if (emb.size() < 2) return Status();
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
  return Status();
}

}  // namespace fusert::app
