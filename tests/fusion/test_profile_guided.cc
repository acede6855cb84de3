// Profile-guided planning: one unfused run times every op; the plan it drives must still be a
// valid plan with the same outputs, and the session must not alter the weights it profiled with.
#include "tests/fusion/fusion_test_util.h"

using namespace fusert;
using namespace fusert::ftest;

TEST_CASE("profile-guided: resnet18 plans from measured op times and matches the unfused output") {
  const std::string path = std::string(FUSERT_SOURCE_DIR) + "/models/resnet18.yaml";
  SessionOptions opt;
  opt.seeded = true;
  opt.profile_guided = true;
  auto guided = Session::load(path, opt);
  REQUIRE_MESSAGE(guided.ok(), guided.status().to_string());
  auto none = open_session(path, "none");
  auto plain = open_session(path, "all");
  TensorMap in = none->seeded_inputs(0);
  TensorMap want = run_session(*none, in);
  check_outputs_close(want, run_session(**guided, in), 1e-5);
  // Hot convolutions lead vertical chains, so the conv+relu groups are the same as without
  // profile data; the kernel count must not get worse.
  CHECK((*guided)->stats().kernels <= plain->stats().kernels);
  CHECK((*guided)->fusion_plan().count_by_strategy().at("vertical") > 0);
}
