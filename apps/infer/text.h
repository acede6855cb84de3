// infer --text / --text-file: sentence embeddings with the model's WordPiece tokenizer.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::app {

/// Reads one text per line from a UTF-8 file; errors name the file and the line of invalid UTF-8.
Result<std::vector<std::string>> read_text_file(const std::string& path);

/// Tokenizes each text (padded to the model's sequence length), runs the model, prints each
/// embedding's dimension, L2 norm and first values, and the cosine-similarity matrix when
/// there are several texts. The model needs inputs `input_ids` and `attention_mask` (i64
/// [1, S]) and a `tokenizer` entry.
Status run_texts(Session& s, const std::vector<std::string>& texts, int runs);

}  // namespace fusert::app
