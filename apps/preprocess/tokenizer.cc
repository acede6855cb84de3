// WordPiece tokenizer: vocabulary loading, special-token splitting, pre-tokenization, greedy
// longest-match-first WordPiece, [CLS]/[SEP] wrapping and truncation. Unicode: unicode_text.h.
#include "apps/preprocess/tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace fusert {
namespace {

// Drops trailing White_Space code points (Rust's str::trim_end, as HF's vocab reader uses).
std::string trim_end(const std::u32string& line) {
  size_t n = line.size();
  while (n > 0 && is_bert_whitespace(line[n - 1])) --n;
  return encode_utf8(std::u32string_view(line).substr(0, n));
}

Result<std::vector<std::string>> read_vocab_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return error(StatusCode::kNotFound) << "cannot open vocabulary file '" << path << "'";
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string text = buf.str();
  if (text.empty()) return error(StatusCode::kParseError) << "vocabulary file '" << path << "' is empty";
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    auto line = decode_utf8(std::string_view(text).substr(start, end - start));
    if (!line.ok()) {
      return error(StatusCode::kParseError)
             << "vocabulary file '" << path << "' line " << lines.size() + 1 << ": " << line.status().message();
    }
    lines.push_back(trim_end(line.value()));
    start = end + 1;
  }
  return lines;
}

}  // namespace

Result<WordPieceTokenizer> WordPieceTokenizer::load(const std::string& vocab_path, WordPieceOptions options) {
  FUSERT_ASSIGN_OR_RETURN(std::vector<std::string> lines, read_vocab_lines(vocab_path));
  WordPieceTokenizer tok;
  tok.options_ = std::move(options);
  tok.token_to_id_.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) tok.token_to_id_[lines[i]] = static_cast<int64_t>(i);
  tok.id_to_token_ = std::move(lines);

  const WordPieceOptions& o = tok.options_;
  std::vector<std::string> required = {o.unk_token, o.cls_token, o.sep_token, o.pad_token};
  required.insert(required.end(), o.special_tokens.begin(), o.special_tokens.end());
  for (const std::string& t : required) {
    if (t.empty() || !tok.token_to_id_.count(t)) {
      return error(StatusCode::kParseError) << "vocabulary file '" << vocab_path << "' (" << tok.id_to_token_.size()
                                            << " tokens) lacks the token '" << t << "'";
    }
  }
  tok.unk_id_ = tok.token_to_id_.at(o.unk_token);
  tok.cls_id_ = tok.token_to_id_.at(o.cls_token);
  tok.sep_id_ = tok.token_to_id_.at(o.sep_token);
  tok.pad_id_ = tok.token_to_id_.at(o.pad_token);
  for (const std::string& t : o.special_tokens) tok.special_ids_.emplace_back(t, tok.token_to_id_.at(t));
  // Longest first, so at one position the longest special token wins (leftmost-longest).
  std::stable_sort(tok.special_ids_.begin(), tok.special_ids_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return tok;
}

std::optional<int64_t> WordPieceTokenizer::token_to_id(std::string_view token) const {
  auto it = token_to_id_.find(std::string(token));
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string& WordPieceTokenizer::id_to_token(int64_t id) const {
  static const std::string kEmpty;
  if (id < 0 || id >= vocab_size()) return kEmpty;
  return id_to_token_[static_cast<size_t>(id)];
}

// Greedy longest-match-first: at each start take the longest vocabulary entry (prefixed with
// "##" after the first piece); if some start has no match the whole word is [UNK].
void WordPieceTokenizer::append_word(std::u32string_view word, std::vector<int64_t>* ids) const {
  if (word.size() > options_.max_input_chars_per_word) {
    ids->push_back(unk_id_);
    return;
  }
  std::string utf8;
  std::vector<size_t> offset;  // byte offset of each code point, plus the end
  for (char32_t cp : word) {
    offset.push_back(utf8.size());
    append_utf8(cp, &utf8);
  }
  offset.push_back(utf8.size());

  const size_t first_piece = ids->size();
  std::string piece;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    int64_t found = -1;
    for (; end > start; --end) {
      piece.assign(start > 0 ? options_.continuing_subword_prefix : std::string());
      piece.append(utf8, offset[start], offset[end] - offset[start]);
      auto it = token_to_id_.find(piece);
      if (it != token_to_id_.end()) {
        found = it->second;
        break;
      }
    }
    if (found < 0) {
      ids->resize(first_piece);
      ids->push_back(unk_id_);
      return;
    }
    ids->push_back(found);
    start = end;
  }
}

// Normalizes a text segment (no special tokens in it), splits it into words and word pieces.
void WordPieceTokenizer::append_normalized_segment(std::string_view utf8, std::vector<int64_t>* ids) const {
  auto decoded = decode_utf8(utf8);
  // encode() validated the whole text and segments are cut at ASCII special tokens.
  FUSERT_CHECK(decoded.ok()) << decoded.status().to_string();
  const std::u32string text = bert_normalize(decoded.value(), options_.normalizer);
  // BertPreTokenizer: whitespace separates words and is dropped; each punctuation code point is
  // a word of its own.
  size_t word_start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool at_end = i == text.size();
    const bool space = !at_end && is_bert_whitespace(text[i]);
    const bool punct = !at_end && !space && is_bert_punctuation(text[i]);
    if (!(at_end || space || punct)) continue;
    if (i > word_start) append_word(std::u32string_view(text).substr(word_start, i - word_start), ids);
    if (punct) append_word(std::u32string_view(text).substr(i, 1), ids);
    word_start = i + 1;
  }
}

// Splits the raw text on special tokens (leftmost, then longest), tokenizing the rest.
std::vector<int64_t> WordPieceTokenizer::tokenize_body(std::string_view utf8) const {
  std::vector<int64_t> ids;
  size_t segment_start = 0;
  for (size_t pos = 0; pos < utf8.size();) {
    const std::pair<std::string, int64_t>* match = nullptr;
    for (const auto& special : special_ids_) {
      if (utf8.compare(pos, special.first.size(), special.first) == 0) {
        match = &special;
        break;
      }
    }
    if (match == nullptr) {
      ++pos;
      continue;
    }
    append_normalized_segment(utf8.substr(segment_start, pos - segment_start), &ids);
    ids.push_back(match->second);
    pos += match->first.size();
    segment_start = pos;
  }
  append_normalized_segment(utf8.substr(segment_start), &ids);
  return ids;
}

Result<Encoding> WordPieceTokenizer::encode(const std::string& utf8_text, int64_t max_length) const {
  const int64_t n_special = options_.add_special_tokens ? 2 : 0;
  if (max_length < 0 || (max_length > 0 && max_length < std::max<int64_t>(n_special, 1))) {
    return error(StatusCode::kInvalidArgument)
           << "max_length " << max_length << " is too small: it must be 0 (no truncation) or at least "
           << std::max<int64_t>(n_special, 1) << " (room for [CLS] and [SEP])";
  }
  auto valid = decode_utf8(utf8_text);
  if (!valid.ok()) return valid.status();

  std::vector<int64_t> body = tokenize_body(utf8_text);
  if (max_length > 0 && static_cast<int64_t>(body.size()) > max_length - n_special) {
    body.resize(static_cast<size_t>(max_length - n_special));
  }
  Encoding enc;
  if (options_.add_special_tokens) enc.ids.push_back(cls_id_);
  enc.ids.insert(enc.ids.end(), body.begin(), body.end());
  if (options_.add_special_tokens) enc.ids.push_back(sep_id_);
  enc.attention_mask.assign(enc.ids.size(), 1);
  if (options_.pad_to_max_length && max_length > static_cast<int64_t>(enc.ids.size())) {
    enc.ids.resize(static_cast<size_t>(max_length), pad_id_);
    enc.attention_mask.resize(static_cast<size_t>(max_length), 0);
  }
  enc.tokens.reserve(enc.ids.size());
  for (int64_t id : enc.ids) enc.tokens.push_back(id_to_token(id));
  return enc;
}

}  // namespace fusert
