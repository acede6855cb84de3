// Unicode text helpers for the tokenizer: strict UTF-8 decoding, and the character classes and
// normalisation of HF `tokenizers` BertNormalizer / BertPreTokenizer, built on utf8proc.
#pragma once

#include <string>
#include <string_view>

#include "graph/base/status.h"

namespace fusert {

/// Decodes UTF-8 into code points. Rejects (kInvalidArgument, naming the byte offset and byte)
/// truncated sequences, stray continuation bytes, overlong forms, surrogates and values past
/// U+10FFFF.
Result<std::u32string> decode_utf8(std::string_view utf8);

/// Appends the UTF-8 form of `cp` (a valid scalar value) to `out`.
void append_utf8(char32_t cp, std::string* out);
/// The UTF-8 form of a code point sequence.
std::string encode_utf8(std::u32string_view text);

/// BertNormalizer's "control": general category Cc, Cf or Co, except tab, LF and CR.
bool is_bert_control(char32_t cp);
/// BertNormalizer's whitespace: tab, LF, CR and Unicode White_Space (Zs, Zl, Zp, U+000B,
/// U+000C, U+0085). The cleaning step drops U+000B, U+000C and U+0085 first, as controls.
bool is_bert_whitespace(char32_t cp);
/// BertPreTokenizer's punctuation: ASCII 33-47, 58-64, 91-96, 123-126, and categories P*.
bool is_bert_punctuation(char32_t cp);
/// The CJK ideograph blocks BertNormalizer pads with spaces (the ranges of HF tokenizers'
/// Rust code, which start CJK Extension F's neighbour range at U+2B920, not U+2B820).
bool is_cjk_ideograph(char32_t cp);

/// Which BertNormalizer steps run (all true for uncased BERT, strip_accents following
/// lowercase when unset).
struct BertNormalizerOptions {
  bool clean_text = true;            ///< drop NUL, U+FFFD, controls; whitespace -> ' '
  bool handle_chinese_chars = true;  ///< surround CJK ideographs with ' '
  bool strip_accents = true;         ///< NFD, then drop category Mn
  bool lowercase = true;             ///< simple (one code point) lowercase mapping
};

/// BertNormalizer over code points, in its order: clean, pad CJK, strip accents, lowercase.
std::u32string bert_normalize(std::u32string_view text, const BertNormalizerOptions& options);

}  // namespace fusert
