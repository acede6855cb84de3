// infer --text / --text-file: sentence embeddings with the model's WordPiece tokenizer.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::app {

/// Reads one text per line from a UTF-8 file; errors name the file and the line of invalid UTF-8.
Result<std::vector<std::string>> read_text_file(const std::string& path);

struct TextRunOptions {
  int runs = 1;         ///< passes over all texts: the first end to end, then the median of the rest
  int batch_size = 32;  ///< texts per run, capped by the model's batch range
  std::string output;   ///< .npy path for all embeddings [n, dim] f32 in input order; empty: none
};

/// Tokenizes every text, sorts them by token count, runs them in batches each padded to its
/// longest text (sentence-transformers' behaviour; a model with a fixed sequence length pads to
/// it, one with a fixed batch of 1 runs one text at a time), and restores the input order.
/// Prints each embedding's dimension, L2 norm and first values (up to 20 texts), a throughput
/// line (texts/s, tokens/s, shapes planned), the cosine-similarity matrix (2 to 10 texts),
/// and a progress bar on stderr for more than 100 texts when stderr is a terminal. The model
/// needs i64 inputs `input_ids` and `attention_mask` ([1 or batch, S]) and a `tokenizer`.
Status run_texts(Session& s, const std::vector<std::string>& texts, const TextRunOptions& o);

}  // namespace fusert::app
