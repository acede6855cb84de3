// Bad inputs to the Transformer models: token ids outside the vocabulary, sequences longer than
// the position table, masks of the wrong shape. Each is a clear error naming the tensor or node.
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/session.h"

using namespace fusert;

namespace {

const std::string kModels = std::string(FUSERT_SOURCE_DIR) + "/models/";

std::unique_ptr<Session> minilm(const std::string& path = kModels + "minilm_l6.yaml") {
  SessionOptions opt;
  opt.seeded = true;  // no weights file needed: these tests are about input checking
  auto s = Session::load(path, opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  return std::move(s).value();
}

Tensor i64_filled(Shape shape, int64_t v) {
  Tensor t(DType::kI64, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.i64()[i] = v;
  return t;
}

}  // namespace

TEST_CASE("minilm_l6: a token id outside the vocabulary is an error naming the node and tensor") {
  auto s = minilm();
  Tensor ids = i64_filled({1, 256}, 101);
  ids.i64()[3] = 30522;  // vocab size is 30522: ids are 0..30521
  auto out = s->run({{"input_ids", ids}, {"attention_mask", i64_filled({1, 256}, 1)}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message().find("index 30522 at position 3 of 'input_ids' is out of range [0, 30522)") !=
        std::string::npos);
  CHECK(out.status().message().find("embeddings.word") != std::string::npos);
  ids.i64()[3] = -30523;
  CHECK_FALSE(s->run({{"input_ids", ids}, {"attention_mask", i64_filled({1, 256}, 1)}}).ok());
}

TEST_CASE("minilm_l6: a sequence longer than the model's is rejected before running") {
  auto s = minilm();
  auto out = s->run({{"input_ids", i64_filled({1, 600}, 101)}, {"attention_mask", i64_filled({1, 600}, 1)}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() ==
        "input 'input_ids' dim 1 ('seq') is 600, outside the range 1..256 that " + kModels + "minilm_l6.yaml declares");
}

TEST_CASE("minilm_l6: a mask of the wrong shape or dtype names the tensor") {
  auto s = minilm();
  auto out = s->run({{"input_ids", i64_filled({1, 256}, 101)}, {"attention_mask", i64_filled({1, 128}, 1)}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() ==
        "input 'attention_mask' dim 1 ('seq') is 128 but input 'input_ids' dim 1 gives 'seq' = 256");
  Tensor f(DType::kF32, {1, 256});
  out = s->run({{"input_ids", i64_filled({1, 256}, 101)}, {"attention_mask", f}});
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message() == "input 'attention_mask': expected dtype i64, got f32");
}

TEST_CASE("minilm_l6 with seq's max beyond the 512-entry position table fails to load, naming the node and dims") {
  std::ifstream in(kModels + "minilm_l6.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string from = "seq: {min: 1, max: 256, opt: 256}", to = "seq: {min: 1, max: 600, opt: 256}";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  const std::string inc = "include: [transformer_block.yaml]";
  REQUIRE(text.find(inc) != std::string::npos);
  text.replace(text.find(inc), inc.size(), "include: [" + kModels + "transformer_block.yaml]");
  char dir[] = "/tmp/fusert_seq600_XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = std::string(dir) + "/minilm_l6.yaml";
  { std::ofstream(path) << text; }
  SessionOptions opt;
  opt.seeded = true;
  auto s = Session::load(path, opt);
  std::remove(path.c_str());
  std::remove(dir);
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message().find("embeddings.add_positions") != std::string::npos);
  CHECK(s.status().message().find("cannot broadcast [64, 600, 384] with [512, 384]") != std::string::npos);
  CHECK(s.status().message().find("(with dims batch = 64, seq = 600)") != std::string::npos);
}
