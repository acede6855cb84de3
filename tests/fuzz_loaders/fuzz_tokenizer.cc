// libFuzzer target: the WordPiece tokenizer (apps/preprocess/tokenizer.h) on arbitrary UTF-8 (and
// invalid UTF-8) text, with a small vocabulary shipped beside this file.
#include "apps/preprocess/tokenizer.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto tok = fusert::WordPieceTokenizer::load(FUSERT_FUZZ_VOCAB);
  if (!tok.ok()) __builtin_trap();  // the shipped vocabulary must load
  auto enc = tok->encode(std::string(reinterpret_cast<const char*>(data), size), 64);
  if (enc.ok() && enc->ids.size() > 64) __builtin_trap();  // truncation is a promise
  return 0;
}
