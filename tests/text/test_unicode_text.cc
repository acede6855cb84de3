// Unicode layer of the tokenizer: strict UTF-8 decoding, and BertNormalizer / BertPreTokenizer
// classes checked on every code point against HF tokenizers (tests/golden/tokenizer/chars.json).
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/preprocess/unicode_text.h"

using fusert::BertNormalizerOptions;
using fusert::StatusCode;

namespace {

const std::string kChars = std::string(FUSERT_SOURCE_DIR) + "/tests/golden/tokenizer/chars.json";

bool is_surrogate(char32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }

std::string hex(char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "U+%04X", static_cast<unsigned>(cp));
  return buf;
}

std::string hex_list(const std::u32string& s) {
  std::string out = "[";
  for (char32_t cp : s) out += (out.size() > 1 ? " " : "") + hex(cp);
  return out + "]";
}

// Marks every code point of each [first, last] range in `flags`.
void mark_ranges(const nlohmann::json& ranges, std::vector<bool>* flags) {
  for (const auto& r : ranges) {
    for (auto cp = r[0].get<uint32_t>(); cp <= r[1].get<uint32_t>(); ++cp) (*flags)[cp] = true;
  }
}

// The reference's normalisation of each code point alone (Hangul syllables excluded).
std::vector<std::u32string> expected_normalization(const nlohmann::json& chars) {
  std::vector<std::u32string> want(0x110000);
  for (char32_t cp = 0; cp < 0x110000; ++cp) want[cp] = std::u32string(1, cp);
  auto fill = [&](const char* key, auto make) {
    for (const auto& r : chars.at(key)) {
      for (auto cp = r[0].get<char32_t>(); cp <= r[1].get<char32_t>(); ++cp) want[cp] = make(cp);
    }
  };
  fill("drop", [](char32_t) { return std::u32string(); });
  fill("space", [](char32_t) { return std::u32string(U" "); });
  fill("pad", [](char32_t cp) { return std::u32string{U' ', cp, U' '}; });
  for (const auto& m : chars.at("map")) {
    std::u32string out;
    for (const auto& cp : m[1]) out.push_back(cp.get<char32_t>());
    want[m[0].get<char32_t>()] = out;
  }
  return want;
}

uint64_t fnv1a64_add(uint64_t h, uint32_t v) {
  for (int i = 0; i < 4; ++i) h = (h ^ ((v >> (8 * i)) & 0xFF)) * 0x100000001B3ULL;
  return h;
}

}  // namespace

TEST_CASE("unicode: decode_utf8 accepts UTF-8 and names the offset of the first bad byte") {
  auto ok = fusert::decode_utf8("a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80");
  REQUIRE(ok.ok());
  CHECK(ok.value() == U"a\u00e9\u4e16\U0001F600");
  CHECK(fusert::encode_utf8(ok.value()) == "a\xC3\xA9\xE4\xB8\x96\xF0\x9F\x98\x80");
  const struct {
    std::string bytes;
    size_t offset;
    const char* why;
  } bad[] = {{"\x80", 0, "continuation"},         {"ab\xC3", 2, "truncated"},      {"\xC3(", 0, "cut short"},
             {"x\xC1\xBF", 1, "overlong"},        {"\xE0\x80\xAF", 0, "overlong"}, {"\xED\xB0\x80", 0, "surrogate"},
             {"\xF4\x90\x80\x80", 0, "U+10FFFF"}, {"\xFE", 0, "never occurs"}};
  for (const auto& b : bad) {
    CAPTURE(b.offset);
    auto r = fusert::decode_utf8(b.bytes);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == StatusCode::kInvalidArgument);
    const std::string& msg = r.status().message();
    CHECK_MESSAGE(msg.find("byte offset " + std::to_string(b.offset) + " ") != std::string::npos, msg);
    CHECK_MESSAGE(msg.find(b.why) != std::string::npos, msg);
  }
}

TEST_CASE("unicode: BertNormalizer steps in order") {
  const BertNormalizerOptions all;
  const std::u32string messy = std::u32string(U"Caf\u00e9\tNa\u00efve\u00a0") + char32_t{0} + U"\u200bX";
  CHECK(fusert::bert_normalize(messy, all) == U"cafe naive x");
  CHECK(fusert::bert_normalize(U"\u4f60\u597d", all) == U" \u4f60  \u597d ");
  // The Rust ranges: U+2B820..U+2B91F (CJK Extension E's start) is not padded, U+2B920 is.
  CHECK(fusert::bert_normalize(U"\U0002B820\U0002B920", all) == U"\U0002B820 \U0002B920 ");
  CHECK(fusert::bert_normalize(U"\ud55c", all) == U"\u1112\u1161\u11ab");         // Hangul: NFD, no padding
  CHECK(fusert::bert_normalize(U"\u0130\u03a3\u1e9e", all) == U"i\u03c3\u00df");  // simple lowercase
  BertNormalizerOptions keep_case;
  keep_case.lowercase = false;
  keep_case.strip_accents = false;
  CHECK(fusert::bert_normalize(U"Caf\u00e9\x0b!", keep_case) == U"Caf\u00e9!");
}

TEST_CASE("unicode: every code point normalizes and classifies as the reference does") {
  std::ifstream in(kChars);
  REQUIRE_MESSAGE(in.good(), "cannot open " << kChars);
  const nlohmann::json chars = nlohmann::json::parse(in);
  const std::vector<std::u32string> want = expected_normalization(chars);
  std::vector<bool> white(0x110000), punct(0x110000);
  mark_ranges(chars.at("whitespace"), &white);
  mark_ranges(chars.at("punct"), &punct);
  const auto& hangul = chars.at("hangul");
  const auto hangul_first = hangul.at("first").get<char32_t>(), hangul_last = hangul.at("last").get<char32_t>();

  const BertNormalizerOptions options;
  std::map<std::string, std::vector<std::string>> mismatches;  // kind -> examples
  size_t n_mismatch = 0;
  uint64_t hangul_hash = 0xCBF29CE484222325ULL;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (is_surrogate(cp)) continue;
    const std::u32string got = fusert::bert_normalize(std::u32string(1, cp), options);
    if (cp >= hangul_first && cp <= hangul_last) {
      for (char32_t c : got) hangul_hash = fnv1a64_add(hangul_hash, c);
      hangul_hash = fnv1a64_add(hangul_hash, 0xFFFFFFFFu);
    } else if (got != want[cp]) {
      ++n_mismatch;
      mismatches["normalize"].push_back(hex(cp) + " -> " + hex_list(got) + ", reference " + hex_list(want[cp]));
    }
    if (fusert::is_bert_whitespace(cp) != white[cp]) {
      ++n_mismatch;
      mismatches["whitespace"].push_back(hex(cp));
    }
    if (!white[cp] && fusert::is_bert_punctuation(cp) != punct[cp]) {
      ++n_mismatch;
      mismatches["punctuation"].push_back(hex(cp) + (punct[cp] ? " (reference: punct)" : " (reference: not)"));
    }
  }
  char hash_hex[24];
  std::snprintf(hash_hex, sizeof(hash_hex), "%016llx", static_cast<unsigned long long>(hangul_hash));
  CHECK_MESSAGE(hangul.at("fnv1a64").get<std::string>() == hash_hex, "Hangul syllables normalize differently");
  for (const auto& s : hangul.at("samples")) {
    std::u32string w;
    for (const auto& c : s[1]) w.push_back(c.get<char32_t>());
    CHECK(fusert::bert_normalize(std::u32string(1, s[0].get<char32_t>()), options) == w);
  }
  // On a mismatch, print all of them: they are what unicode_text.cc's quirk ranges must list.
  for (const auto& [kind, list] : mismatches) {
    std::string text;
    for (const auto& m : list) text += "\n  " + m;
    MESSAGE(list.size() << " " << kind << " mismatches:" << text);
  }
  CHECK(n_mismatch == 0);
}
