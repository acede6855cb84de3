// BERT WordPiece tokenizer (uncased): text -> token ids for the sequence models, matching HF
// `tokenizers` (BertNormalizer, BertPreTokenizer, WordPiece, [CLS] A [SEP] template) exactly.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "apps/preprocess/unicode_text.h"
#include "graph/base/status.h"

namespace fusert {

/// Settings of a WordPieceTokenizer; the defaults are all-MiniLM-L6-v2's tokenizer.json.
struct WordPieceOptions {
  std::string unk_token = "[UNK]";
  std::string cls_token = "[CLS]";
  std::string sep_token = "[SEP]";
  std::string pad_token = "[PAD]";
  std::string continuing_subword_prefix = "##";
  /// A word longer than this (in code points, after normalisation) becomes unk_token.
  size_t max_input_chars_per_word = 100;
  /// Tokens matched verbatim (case-sensitive) in the raw text before normalisation and kept
  /// whole, like HF's added tokens with `normalized: false`: "a[MASK]b" -> a [MASK] b.
  std::vector<std::string> special_tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  BertNormalizerOptions normalizer;
  /// Wrap the sequence as [CLS] ... [SEP].
  bool add_special_tokens = true;
  /// Pad with pad_token (attention_mask 0) up to max_length; HF's single-text default is no.
  bool pad_to_max_length = false;
};

/// One encoded text. All three vectors have the same length n (n <= max_length when truncated).
struct Encoding {
  std::vector<int64_t> ids;             ///< [n] vocabulary ids
  std::vector<int64_t> attention_mask;  ///< [n] 1 for real tokens, 0 for padding
  std::vector<std::string> tokens;      ///< [n] vocabulary strings ("[CLS]", "hello", "##s")
};

/// Uncased BERT WordPiece tokenizer. Pipeline: special tokens split out of the raw text;
/// BertNormalizer (drop NUL/U+FFFD/controls, whitespace -> ' ', space around CJK ideographs,
/// NFD + drop Mn, lowercase); split on whitespace and punctuation (punctuation kept as its own
/// word); greedy longest-match-first WordPiece with "##" continuations ([UNK] for a word with
/// no match or over max_input_chars_per_word); [CLS] ... [SEP]; truncation. Immutable after
/// load, so encode() may run from several threads.
class WordPieceTokenizer {
 public:
  /// Reads a vocab.txt (one token per line, the id is the 0-based line number; trailing
  /// whitespace trimmed; a repeated token takes its last line).
  /// Errors: kNotFound (file cannot be opened), kParseError (empty file, a line that is not
  /// UTF-8, or unk/cls/sep/pad/special tokens missing), each naming the file.
  static Result<WordPieceTokenizer> load(const std::string& vocab_path, WordPieceOptions options = {});

  /// Tokenizes one UTF-8 text. `max_length` bounds the number of tokens, [CLS] and [SEP]
  /// included (sentence-transformers uses 256 for all-MiniLM-L6-v2): the word pieces are cut
  /// to max_length - 2 and [SEP] stays last. max_length 0 means no truncation.
  /// Errors: kInvalidArgument for invalid UTF-8 (naming the byte offset), for max_length < 0,
  /// or for a max_length too small to hold [CLS] and [SEP].
  Result<Encoding> encode(const std::string& utf8_text, int64_t max_length) const;

  /// Number of vocabulary entries (the largest id + 1).
  int64_t vocab_size() const { return static_cast<int64_t>(id_to_token_.size()); }
  /// The id of `token`, if the vocabulary holds it.
  std::optional<int64_t> token_to_id(std::string_view token) const;
  /// The string of `id`; empty for an id outside [0, vocab_size()).
  const std::string& id_to_token(int64_t id) const;

 private:
  WordPieceTokenizer() = default;
  void append_word(std::u32string_view word, std::vector<int64_t>* ids) const;
  void append_normalized_segment(std::string_view utf8, std::vector<int64_t>* ids) const;
  std::vector<int64_t> tokenize_body(std::string_view utf8) const;

  WordPieceOptions options_;
  std::unordered_map<std::string, int64_t> token_to_id_;
  std::vector<std::string> id_to_token_;
  std::vector<std::pair<std::string, int64_t>> special_ids_;  // longest first
  int64_t unk_id_ = 0, cls_id_ = 0, sep_id_ = 0, pad_id_ = 0;
};

}  // namespace fusert
