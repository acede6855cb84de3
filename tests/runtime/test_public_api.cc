// The public API (fusert/fusert.h) as an application uses it: only that header, the image and
// labels helpers around Session, and the errors they return. (tests/install builds an
// application against the installed package; this checks the calls' values and errors.)
#include <doctest/doctest.h>

#include <fusert/fusert.h>

#include <cstring>
#include <string>

using namespace fusert;

namespace {
const std::string kModels = FUSERT_SOURCE_DIR "/models/";
}

TEST_CASE("public API: read_image and labels give the demo's top-1 (PyTorch reference: espresso)") {
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(kModels + "efficientnet_lite0.yaml", opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto labels = (*s)->labels();
  REQUIRE(labels.ok());
  REQUIRE(labels->size() == 1000);
  CHECK((*labels)[967] == "espresso");
  auto x = (*s)->read_image(kModels + "data/coffee.png");
  REQUIRE_MESSAGE(x.ok(), x.status().to_string());
  CHECK(x->shape() == Shape{1, 3, 224, 224});
  const std::vector<TensorInfo> ins = (*s)->inputs(), outs = (*s)->outputs();
  REQUIRE(ins.size() == 1);
  REQUIRE(outs.size() == 1);
  auto y = (*s)->run({{ins[0].name, *x}});
  REQUIRE(y.ok());
  const Tensor& logits = y->at(outs[0].name);
  REQUIRE(logits.shape() == Shape{1, 1000});
  int64_t best = 0;
  for (int64_t i = 1; i < 1000; ++i) best = logits.f32()[i] > logits.f32()[best] ? i : best;
  CHECK(best == 967);
  CHECK(std::strlen(version()) >= 5);
}

TEST_CASE("public API: read_image errors name the model or the file") {
  SessionOptions opt;
  opt.threads = 1;
  auto s = Session::load(kModels + "branch_merge.yaml", opt);  // declares no preprocessing
  REQUIRE(s.ok());
  auto x = (*s)->read_image(kModels + "data/coffee.png");
  REQUIRE(!x.ok());
  CHECK(x.status().code() == StatusCode::kUnsupported);
  CHECK(x.status().message().find("branch_merge.yaml: the model declares no image preprocessing") != std::string::npos);
  auto labels = (*s)->labels();  // none declared: empty, not an error
  REQUIRE(labels.ok());
  CHECK(labels->empty());

  auto e = Session::load(kModels + "efficientnet_lite0.yaml", opt);
  REQUIRE(e.ok());
  auto missing = (*e)->read_image(kModels + "data/nope.png");
  REQUIRE(!missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message().find("nope.png") != std::string::npos);
  auto not_image = (*e)->read_image(kModels + "FORMAT.md");
  REQUIRE(!not_image.ok());
  CHECK(not_image.status().message().find("FORMAT.md") != std::string::npos);
}
