// Zoo regression: every model in models/ against outputs of PyTorch (tools/make_goldens.py) on
// the same weights and input: relative L2 <= 1e-4 and the same top-5 classes, in order.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "apps/preprocess/image.h"
#include "runtime/npy.h"
#include "runtime/session.h"

using namespace fusert;

namespace {

const std::string kRoot = FUSERT_SOURCE_DIR;

std::vector<int64_t> top5(const Tensor& t) {
  std::vector<int64_t> idx(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = static_cast<int64_t>(i);
  std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(),
                    [&](int64_t a, int64_t b) { return t.f32()[a] > t.f32()[b]; });
  idx.resize(5);
  return idx;
}

std::vector<int64_t> golden_top5(const std::string& json_path) {
  std::ifstream f(json_path);
  REQUIRE_MESSAGE(f.good(), json_path);
  nlohmann::json j = nlohmann::json::parse(f);
  std::vector<int64_t> idx;
  for (const auto& e : j["top5"]) idx.push_back(e["index"].get<int64_t>());
  return idx;
}

// Runs `model` with the given weights mode and input, compares to golden <model>.<case>.
// Returns the plan's kernel count.
int64_t check_golden(const std::string& model, const std::string& gcase, bool seeded, const std::string& photo,
                     const std::string& fusion = "all", bool profile_guided = false) {
  CAPTURE(model);
  CAPTURE(gcase);
  CAPTURE(fusion);
  SessionOptions opt;
  opt.seeded = seeded;
  opt.fusion = fusion;
  opt.profile_guided = profile_guided;
  auto s = Session::load(kRoot + "/models/" + model + ".yaml", opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  TensorMap inputs = (*s)->seeded_inputs(0);
  if (!photo.empty()) {
    auto img = decode_image(kRoot + "/models/data/" + photo);
    REQUIRE(img.ok());
    auto x = preprocess_image(*img, (*s)->model().preprocess);
    REQUIRE(x.ok());
    inputs["input"] = *x;
  }
  auto out = (*s)->run(inputs);
  REQUIRE_MESSAGE(out.ok(), out.status().to_string());
  const Tensor& y = out->at("logits");
  auto golden = read_npy(kRoot + "/models/golden/" + model + "." + gcase + ".npy");
  REQUIRE_MESSAGE(golden.ok(), golden.status().to_string());
  REQUIRE(golden->numel() == y.numel());
  double rel = relative_l2(y, *golden);
  MESSAGE(model << "." << gcase << ": relative L2 vs PyTorch = " << rel);
  CHECK(rel <= 1e-4);
  CHECK(top5(y) == golden_top5(kRoot + "/models/golden/" + model + "." + gcase + ".json"));
  return (*s)->stats().kernels;
}

}  // namespace

TEST_CASE("resnet18 (seeded weights) matches torchvision") { check_golden("resnet18", "seeded", true, ""); }
TEST_CASE("resnet50 (seeded weights) matches torchvision") { check_golden("resnet50", "seeded", true, ""); }
TEST_CASE("mobilenet_v2 (seeded weights) matches torchvision") { check_golden("mobilenet_v2", "seeded", true, ""); }
// MobileNetV3-small (tools/export_torchvision.py): squeeze-and-excitation gates in 9 of its 11
// blocks, the pattern whose fused output was once wrong. Every fusion mode against PyTorch.
TEST_CASE("mobilenet_v3_small (seeded weights) matches torchvision in every fusion mode") {
  const int64_t unfused = check_golden("mobilenet_v3_small", "seeded", true, "", "none");
  for (const char* mode : {"vertical", "horizontal", "cross", "compound", "all"})
    check_golden("mobilenet_v3_small", "seeded", true, "", mode);
  const int64_t fused = check_golden("mobilenet_v3_small", "seeded", true, "", "all", true);
  MESSAGE("mobilenet_v3_small: " << unfused << " kernels unfused, " << fused << " fused");
  CHECK(fused < unfused);
}
TEST_CASE("efficientnet_lite0 (seeded weights) matches efficientnet-lite-pytorch") {
  check_golden("efficientnet_lite0", "seeded", true, "");
}
TEST_CASE("efficientnet_lite0 (real weights) on coffee.png matches the PyTorch reference") {
  check_golden("efficientnet_lite0", "coffee", false, "coffee.png");
}
TEST_CASE("efficientnet_lite0 (real weights) on chelsea.png matches the PyTorch reference") {
  check_golden("efficientnet_lite0", "chelsea", false, "chelsea.png");
}

TEST_CASE("default demo: top-1 on the bundled photo is the PyTorch reference's label (espresso)") {
  SessionOptions opt;
  auto s = Session::load(kRoot + "/models/efficientnet_lite0.yaml", opt);
  REQUIRE_MESSAGE(s.ok(), s.status().to_string());
  auto img = decode_image(kRoot + "/models/data/coffee.png");
  REQUIRE(img.ok());
  auto x = preprocess_image(*img, (*s)->model().preprocess);
  REQUIRE(x.ok());
  auto out = (*s)->run({{"input", *x}});
  REQUIRE(out.ok());
  std::vector<int64_t> golden = golden_top5(kRoot + "/models/golden/efficientnet_lite0.coffee.json");
  CHECK(top5(out->at("logits"))[0] == golden[0]);
  CHECK(golden[0] == 967);  // "espresso" in models/imagenet_labels.txt (0-based line 967)
}
