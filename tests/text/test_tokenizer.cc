// WordPiece tokenizer: ids equal HF tokenizers 0.19.1 for every golden text (real MiniLM
// vocabulary), hand-checked cases, truncation, padding, and the error paths.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/preprocess/tokenizer.h"

namespace fs = std::filesystem;
using fusert::StatusCode;
using fusert::WordPieceOptions;
using fusert::WordPieceTokenizer;

namespace {

const std::string kVocab = std::string(FUSERT_SOURCE_DIR) + "/.cache/minilm/vocab.txt";
const std::string kGolden = std::string(FUSERT_SOURCE_DIR) + "/tests/golden/tokenizer/";

// The real vocabulary, or a failed check telling how to fetch it (never a silent pass).
const WordPieceTokenizer* minilm() {
  static const auto tok = WordPieceTokenizer::load(kVocab);
  if (!tok.ok()) {
    FAIL_CHECK("the all-MiniLM-L6-v2 vocabulary is missing (" << tok.status().message()
                                                              << "); run `make weights` (or "
                                                                 "/usr/bin/python3 tools/fetch_minilm.py)");
    return nullptr;
  }
  return &tok.value();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return nlohmann::json::parse(in);
}

std::string join(const std::vector<int64_t>& v) {
  std::ostringstream os;
  for (size_t i = 0; i < v.size(); ++i) os << (i ? " " : "") << v[i];
  return os.str();
}

std::string join_tokens(const WordPieceTokenizer& tok, const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids) out += (out.empty() ? "" : " ") + tok.id_to_token(id);
  return out;
}

// The text with control and non-ASCII code points as escapes, for failure messages.
std::string escaped(const std::string& s) { return nlohmann::json(s).dump(); }

// Bytes as hex, for texts that are not UTF-8.
std::string hex_bytes(const std::string& s) {
  std::string out;
  char buf[4];
  for (unsigned char c : s) {
    std::snprintf(buf, sizeof(buf), "%02X", c);
    out += (out.empty() ? "" : " ") + std::string(buf);
  }
  return out;
}

// A scratch file under the system temp folder, removed at scope exit.
struct TempFile {
  explicit TempFile(const std::string& content) {
    static int counter = 0;
    const std::string name = "fusert_tokenizer_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".txt";
    path = (fs::temp_directory_path() / name).string();
    std::ofstream(path, std::ios::binary) << content;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

}  // namespace

TEST_CASE("tokenizer: ids equal the HF tokenizers reference for every golden text") {
  const WordPieceTokenizer* tok = minilm();
  if (tok == nullptr) return;
  const nlohmann::json texts = read_json(kGolden + "texts.json");
  const nlohmann::json golden = read_json(kGolden + "ids.json");
  const auto& cases = golden.at("cases");
  REQUIRE(texts.size() == cases.size());
  REQUIRE(texts.size() >= 220);
  const int64_t max_length = golden.at("max_length").get<int64_t>();
  CHECK(max_length == 256);
  size_t matched = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::string text = texts[i].get<std::string>();
    const auto want_ids = cases[i].at("ids").get<std::vector<int64_t>>();
    const auto want_mask = cases[i].at("attention_mask").get<std::vector<int64_t>>();
    auto enc = tok->encode(text, max_length);
    REQUIRE_MESSAGE(enc.ok(), "text " << i << " " << escaped(text) << ": " << enc.status().to_string());
    if (enc->ids != want_ids || enc->attention_mask != want_mask) {
      FAIL("first mismatch: text " << i << " " << escaped(text) << "\n  reference ids: " << join(want_ids)
                                   << "\n  fusert ids:    " << join(enc->ids) << "\n  reference: "
                                   << join_tokens(*tok, want_ids) << "\n  fusert:    " << join_tokens(*tok, enc->ids));
    }
    ++matched;
  }
  MESSAGE(matched << " golden texts match the reference");
}

TEST_CASE("tokenizer: hand-checked encodings with the real vocabulary") {
  const WordPieceTokenizer* tok = minilm();
  if (tok == nullptr) return;
  CHECK(tok->vocab_size() == 30522);
  CHECK(tok->token_to_id("[CLS]") == 101);
  CHECK(tok->token_to_id("hello") == 7592);
  CHECK_FALSE(tok->token_to_id("no-such-token").has_value());
  CHECK(tok->id_to_token(102) == "[SEP]");
  CHECK(tok->id_to_token(-1).empty());

  const struct {
    std::string text;
    std::vector<int64_t> ids;
    std::vector<std::string> tokens;
  } cases[] = {
      {"Hello, world!", {101, 7592, 1010, 2088, 999, 102}, {"[CLS]", "hello", ",", "world", "!", "[SEP]"}},
      {"unaffable", {101, 14477, 20961, 3468, 102}, {"[CLS]", "una", "##ffa", "##ble", "[SEP]"}},
      {"Caf\u00e9 \u00c5ngstr\u00f6m na\u00efve",
       {101, 7668, 17076, 15687, 15743, 102},
       {"[CLS]", "cafe", "ang", "##strom", "naive", "[SEP]"}},
      {"don't", {101, 2123, 1005, 1056, 102}, {"[CLS]", "don", "'", "t", "[SEP]"}},
      {"Paris is the [MASK] of France.",
       {101, 3000, 2003, 1996, 103, 1997, 2605, 1012, 102},
       {"[CLS]", "paris", "is", "the", "[MASK]", "of", "france", ".", "[SEP]"}},
      {std::string(101, 'a'), {101, 100, 102}, {"[CLS]", "[UNK]", "[SEP]"}},
      {"", {101, 102}, {"[CLS]", "[SEP]"}},
      {" \t\n", {101, 102}, {"[CLS]", "[SEP]"}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.text);
    auto enc = tok->encode(c.text, 256);
    REQUIRE(enc.ok());
    CHECK(enc->ids == c.ids);
    CHECK(enc->tokens == c.tokens);
    CHECK(enc->attention_mask == std::vector<int64_t>(c.ids.size(), 1));
  }
}

TEST_CASE("tokenizer: truncation keeps [CLS] first and [SEP] last") {
  const WordPieceTokenizer* tok = minilm();
  if (tok == nullptr) return;
  std::string text;
  for (int i = 0; i < 400; ++i) text += "word ";
  for (int64_t max_length : {2, 3, 8, 256, 512}) {
    CAPTURE(max_length);
    auto enc = tok->encode(text, max_length);
    REQUIRE(enc.ok());
    REQUIRE(static_cast<int64_t>(enc->ids.size()) == std::min<int64_t>(max_length, 402));
    CHECK(enc->ids.front() == 101);
    CHECK(enc->ids.back() == 102);
    CHECK(enc->tokens.size() == enc->ids.size());
    CHECK(enc->attention_mask == std::vector<int64_t>(enc->ids.size(), 1));
  }
  auto all = tok->encode(text, 0);  // 0: no truncation
  REQUIRE(all.ok());
  CHECK(all->ids.size() == 402);
  for (int64_t bad : {int64_t{-1}, int64_t{1}}) {
    auto enc = tok->encode(text, bad);
    REQUIRE_FALSE(enc.ok());
    CHECK(enc.status().code() == StatusCode::kInvalidArgument);
    CHECK(enc.status().message().find("max_length") != std::string::npos);
  }
}

TEST_CASE("tokenizer: invalid UTF-8 is an error naming the byte offset") {
  const WordPieceTokenizer* tok = minilm();
  if (tok == nullptr) return;
  const struct {
    std::string text;
    size_t offset;
  } cases[] = {{"ab\xC3(", 2},     {"\xFF", 0},  {"ok \xC0\xAF", 3},     {"caf\xC3\xA9 \xED\xA0\x80", 6},
               {"abc\xE2\x82", 3}, {"a\x80", 1}, {"\xF4\x90\x80\x80", 0}};
  for (const auto& c : cases) {
    CAPTURE(hex_bytes(c.text));
    auto enc = tok->encode(c.text, 256);
    REQUIRE_FALSE(enc.ok());
    CHECK(enc.status().code() == StatusCode::kInvalidArgument);
    const std::string want = "byte offset " + std::to_string(c.offset) + " ";
    CHECK_MESSAGE(enc.status().message().find(want) != std::string::npos, enc.status().message());
  }
}

TEST_CASE("tokenizer: vocabulary errors name the file") {
  auto missing = WordPieceTokenizer::load("/nonexistent/fusert/vocab.txt");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("/nonexistent/fusert/vocab.txt") != std::string::npos);

  TempFile empty("");
  auto e = WordPieceTokenizer::load(empty.path);
  REQUIRE_FALSE(e.ok());
  CHECK(e.status().code() == StatusCode::kParseError);
  CHECK(e.status().message().find(empty.path) != std::string::npos);
  CHECK(e.status().message().find("empty") != std::string::npos);

  TempFile no_unk("[PAD]\n[CLS]\n[SEP]\nhello\n");
  auto u = WordPieceTokenizer::load(no_unk.path);
  REQUIRE_FALSE(u.ok());
  CHECK(u.status().message().find("[UNK]") != std::string::npos);
  CHECK(u.status().message().find(no_unk.path) != std::string::npos);

  TempFile bad_utf8("[PAD]\n[UNK]\n\xFF\n");
  auto b = WordPieceTokenizer::load(bad_utf8.path);
  REQUIRE_FALSE(b.ok());
  CHECK(b.status().message().find("line 3") != std::string::npos);
}

TEST_CASE("tokenizer: WordPiece on a tiny vocabulary (greedy longest match, [UNK], padding)") {
  TempFile vocab("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##aff\n##able\n##a\nplay\n##ing\n!\n\xC3\xA9t\xC3\xA9\n");
  WordPieceOptions options;
  options.max_input_chars_per_word = 8;
  options.pad_to_max_length = true;
  auto tok = WordPieceTokenizer::load(vocab.path, options);
  REQUIRE(tok.ok());
  auto enc = tok->encode("Unaffable playing! unknown playinga \xC3\x89T\xC3\x89 [MASK]", 16);
  REQUIRE(enc.ok());
  // "unaffable" (9 code points) is over the 8-character limit here; "playinga" is 8.
  CHECK(enc->tokens == std::vector<std::string>{"[CLS]", "[UNK]", "play", "##ing", "!", "[UNK]", "play", "##ing", "##a",
                                                "[UNK]", "[MASK]", "[SEP]", "[PAD]", "[PAD]", "[PAD]", "[PAD]"});
  CHECK(enc->attention_mask == std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0});
}
