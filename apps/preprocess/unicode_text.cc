// UTF-8 decoding and BertNormalizer on utf8proc (categories, canonical decomposition with
// canonical ordering, simple lowercase). Why utf8proc: see tools/README.md, "Tokenizer".
#include "apps/preprocess/unicode_text.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

namespace fusert {
namespace {

// The reference (HF tokenizers 0.19.1) takes categories from the Rust crate unicode_categories
// 0.1 (Unicode 8.0 tables) and NFD from unicode-normalization-alignments (pre-Unicode 13);
// utf8proc 2.8 is Unicode 15. These ranges are where the two disagree on a single code point,
// found by comparing every code point with the reference (tests/golden/tokenizer/chars.json):
//   kReferenceUnchanged: newer Mn/Cf/decomposable code points the reference passes through as is
//                        (not dropped, not decomposed, combining class 0);
//   kReferenceMarks:     U+1734, Mn in the reference's tables (Mc since Unicode 14): stripped;
//   kPunctuationFlips:   P* in exactly one of the two (newer P* code points, and U+166D, Po
//                        before Unicode 12 and So since).
// When utf8proc changes, empty these, run test_text (it lists every mismatch) and refill them.
struct CodeRange {
  char32_t first, last;
};

constexpr CodeRange kReferenceUnchanged[] = {
    // 94 ranges, 440 code points
    {0x7FD, 0x7FD},     {0x890, 0x891},     {0x898, 0x89F},     {0x8CA, 0x8E2},     {0x9FE, 0x9FE},
    {0xAFA, 0xAFF},     {0xB55, 0xB55},     {0xC04, 0xC04},     {0xC3C, 0xC3C},     {0xD00, 0xD00},
    {0xD3B, 0xD3C},     {0xD81, 0xD81},     {0xEBA, 0xEBA},     {0xECE, 0xECE},     {0x180F, 0x180F},
    {0x1885, 0x1886},   {0x1ABF, 0x1ACE},   {0x1DF6, 0x1DFB},   {0xA82C, 0xA82C},   {0xA8C5, 0xA8C5},
    {0xA8FF, 0xA8FF},   {0xA9BD, 0xA9BD},   {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
    {0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x11073, 0x11074}, {0x110C2, 0x110C2},
    {0x110CD, 0x110CD}, {0x111C9, 0x111C9}, {0x111CF, 0x111CF}, {0x1123E, 0x1123E}, {0x11241, 0x11241},
    {0x1133B, 0x1133B}, {0x11438, 0x1143F}, {0x11442, 0x11444}, {0x11446, 0x11446}, {0x1145E, 0x1145E},
    {0x1182F, 0x11837}, {0x11839, 0x1183A}, {0x11938, 0x11938}, {0x1193B, 0x1193C}, {0x1193E, 0x1193E},
    {0x11943, 0x11943}, {0x119D4, 0x119D7}, {0x119DA, 0x119DB}, {0x119E0, 0x119E0}, {0x11A01, 0x11A0A},
    {0x11A33, 0x11A38}, {0x11A3B, 0x11A3E}, {0x11A47, 0x11A47}, {0x11A51, 0x11A56}, {0x11A59, 0x11A5B},
    {0x11A8A, 0x11A96}, {0x11A98, 0x11A99}, {0x11C30, 0x11C36}, {0x11C38, 0x11C3D}, {0x11C3F, 0x11C3F},
    {0x11C92, 0x11CA7}, {0x11CAA, 0x11CB0}, {0x11CB2, 0x11CB3}, {0x11CB5, 0x11CB6}, {0x11D31, 0x11D36},
    {0x11D3A, 0x11D3A}, {0x11D3C, 0x11D3D}, {0x11D3F, 0x11D45}, {0x11D47, 0x11D47}, {0x11D90, 0x11D91},
    {0x11D95, 0x11D95}, {0x11D97, 0x11D97}, {0x11EF3, 0x11EF4}, {0x11F00, 0x11F01}, {0x11F36, 0x11F3A},
    {0x11F40, 0x11F40}, {0x11F42, 0x11F42}, {0x13430, 0x13440}, {0x13447, 0x13455}, {0x16F4F, 0x16F4F},
    {0x16FE4, 0x16FE4}, {0x1CF00, 0x1CF2D}, {0x1CF30, 0x1CF46}, {0x1E000, 0x1E006}, {0x1E008, 0x1E018},
    {0x1E01B, 0x1E021}, {0x1E023, 0x1E024}, {0x1E026, 0x1E02A}, {0x1E08F, 0x1E08F}, {0x1E130, 0x1E136},
    {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF}, {0x1E944, 0x1E94A},
};
constexpr CodeRange kReferenceMarks[] = {
    // 1 ranges, 1 code points
    {0x1734, 0x1734},
};
constexpr CodeRange kPunctuationFlips[] = {
    // 34 ranges, 129 code points
    {0x61D, 0x61D},     {0x9FD, 0x9FD},     {0xA76, 0xA76},     {0xC77, 0xC77},     {0xC84, 0xC84},
    {0x166D, 0x166D},   {0x1B7D, 0x1B7E},   {0x2E43, 0x2E4F},   {0x2E52, 0x2E5D},   {0x10EAD, 0x10EAD},
    {0x10F55, 0x10F59}, {0x10F86, 0x10F89}, {0x111C9, 0x111C9}, {0x1144B, 0x1144F}, {0x1145A, 0x1145B},
    {0x1145D, 0x1145D}, {0x11660, 0x1166C}, {0x116B9, 0x116B9}, {0x1183B, 0x1183B}, {0x11944, 0x11946},
    {0x119E2, 0x119E2}, {0x11A3F, 0x11A46}, {0x11A9A, 0x11A9C}, {0x11A9E, 0x11AA2}, {0x11B00, 0x11B09},
    {0x11C41, 0x11C45}, {0x11C70, 0x11C71}, {0x11EF7, 0x11EF8}, {0x11F43, 0x11F4F}, {0x11FFF, 0x11FFF},
    {0x12FF1, 0x12FF2}, {0x16E97, 0x16E9A}, {0x16FE2, 0x16FE2}, {0x1E95E, 0x1E95F},
};

template <size_t N>
bool in_ranges(const CodeRange (&table)[N], char32_t cp) {
  size_t lo = 0, hi = N;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (cp < table[mid].first) {
      hi = mid;
    } else if (cp > table[mid].last) {
      lo = mid + 1;
    } else {
      return true;
    }
  }
  return false;
}

utf8proc_category_t category(char32_t cp) { return utf8proc_category(static_cast<utf8proc_int32_t>(cp)); }

// Why a sequence starting at `offset` is not UTF-8 (called once utf8proc_iterate refused it).
const char* utf8_problem(std::string_view s, size_t offset) {
  const auto lead = static_cast<unsigned char>(s[offset]);
  if (lead >= 0x80 && lead < 0xC0) return "a continuation byte with no lead byte";
  if (lead == 0xC0 || lead == 0xC1) return "an overlong 2-byte sequence";
  if (lead >= 0xF5) return "a byte that never occurs in UTF-8";
  const size_t need = lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  for (size_t i = 1; i < need; ++i) {
    if (offset + i >= s.size()) return "a sequence truncated by the end of the text";
    const auto b = static_cast<unsigned char>(s[offset + i]);
    if ((b & 0xC0) != 0x80) return "a sequence cut short by a non-continuation byte";
  }
  return "an overlong form, a surrogate or a value past U+10FFFF";
}

}  // namespace

Result<std::u32string> decode_utf8(std::string_view utf8) {
  std::u32string out;
  out.reserve(utf8.size());
  size_t pos = 0;
  while (pos < utf8.size()) {
    utf8proc_int32_t cp = 0;
    const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(utf8.data() + pos);
    const utf8proc_ssize_t n = utf8proc_iterate(p, static_cast<utf8proc_ssize_t>(utf8.size() - pos), &cp);
    if (n <= 0 || cp < 0) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(utf8[pos])));
      return error(StatusCode::kInvalidArgument)
             << "invalid UTF-8 at byte offset " << pos << " (byte " << hex << "): " << utf8_problem(utf8, pos);
    }
    out.push_back(static_cast<char32_t>(cp));
    pos += static_cast<size_t>(n);
  }
  return out;
}

void append_utf8(char32_t cp, std::string* out) {
  utf8proc_uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out->append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

std::string encode_utf8(std::u32string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char32_t cp : text) append_utf8(cp, &out);
  return out;
}

bool is_bert_control(char32_t cp) {
  if (cp == U'\t' || cp == U'\n' || cp == U'\r') return false;
  if (in_ranges(kReferenceUnchanged, cp)) return false;
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO;
}

bool is_bert_whitespace(char32_t cp) {
  if ((cp >= 0x09 && cp <= 0x0D) || cp == 0x85) return true;
  const utf8proc_category_t c = category(cp);
  return c == UTF8PROC_CATEGORY_ZS || c == UTF8PROC_CATEGORY_ZL || c == UTF8PROC_CATEGORY_ZP;
}

bool is_bert_punctuation(char32_t cp) {
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  const utf8proc_category_t c = category(cp);
  const bool p = c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
  return p != in_ranges(kPunctuationFlips, cp);
}

bool is_cjk_ideograph(char32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
         (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

namespace {

// Clean text and pad CJK ideographs with spaces.
std::u32string clean_and_pad(std::u32string_view text, const BertNormalizerOptions& options) {
  std::u32string out;
  out.reserve(text.size() + 8);
  for (char32_t cp : text) {
    if (options.clean_text) {
      if (cp == 0 || cp == 0xFFFD || is_bert_control(cp)) continue;
      if (is_bert_whitespace(cp)) cp = U' ';
    }
    if (options.handle_chinese_chars && is_cjk_ideograph(cp)) {
      out.append({U' ', cp, U' '});
    } else {
      out.push_back(cp);
    }
  }
  return out;
}

struct DecomposedChar {
  char32_t cp;
  int ccc;  // canonical combining class
};

// Appends the full canonical decomposition of `cp` (utf8proc, Hangul included).
void decompose(char32_t cp, std::vector<DecomposedChar>* out) {
  if (in_ranges(kReferenceUnchanged, cp)) {
    out->push_back({cp, 0});
    return;
  }
  utf8proc_int32_t buf[8];
  int boundclass = 0;
  const utf8proc_ssize_t n =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 8, UTF8PROC_DECOMPOSE, &boundclass);
  // Canonical decompositions are at most 4 code points long; cp is a valid scalar value.
  FUSERT_CHECK(n > 0 && n <= 8) << "utf8proc_decompose_char(" << static_cast<uint32_t>(cp) << ") = " << n;
  for (utf8proc_ssize_t i = 0; i < n; ++i) {
    out->push_back({static_cast<char32_t>(buf[i]), utf8proc_get_property(buf[i])->combining_class});
  }
}

// NFD, then drops category Mn (accents and other non-spacing marks).
std::u32string strip_accents(const std::u32string& text) {
  std::vector<DecomposedChar> chars;
  chars.reserve(text.size() + 8);
  for (char32_t cp : text) decompose(cp, &chars);
  // Canonical ordering: each run of non-starters (ccc != 0) sorted stably by class.
  for (size_t i = 0; i < chars.size();) {
    size_t j = i;
    while (j < chars.size() && chars[j].ccc != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(chars.begin() + static_cast<std::ptrdiff_t>(i), chars.begin() + static_cast<std::ptrdiff_t>(j),
                       [](const DecomposedChar& a, const DecomposedChar& b) { return a.ccc < b.ccc; });
    }
    i = j > i ? j : i + 1;
  }
  std::u32string out;
  out.reserve(chars.size());
  for (const DecomposedChar& m : chars) {
    const bool unchanged = in_ranges(kReferenceUnchanged, m.cp);
    if (!unchanged && (category(m.cp) == UTF8PROC_CATEGORY_MN || in_ranges(kReferenceMarks, m.cp))) continue;
    out.push_back(m.cp);
  }
  return out;
}

}  // namespace

std::u32string bert_normalize(std::u32string_view text, const BertNormalizerOptions& options) {
  std::u32string out = clean_and_pad(text, options);
  if (options.strip_accents) out = strip_accents(out);
  if (options.lowercase) {
    for (char32_t& cp : out) cp = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
  }
  return out;
}

}  // namespace fusert
