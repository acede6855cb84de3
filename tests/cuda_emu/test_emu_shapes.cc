// Symbolic dims on the CUDA backend, end to end on the emulated device (tests/cuda_emu): each
// input shape gets its own instance (lowering, arena, CUDA Graph captured on its second run);
// every run at every shape, and a shape revisited after others, equals the CPU backend at that
// shape (rel L2 <= 1e-5), and the emulation's checks report nothing.
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <sstream>
#include <string>

#include "runtime/session.h"
#include "runtime/shape_cache.h"
#include "tests/cuda_emu/emu.h"

using namespace fusert;

namespace {

const std::string kModels = std::string(FUSERT_SOURCE_DIR) + "/models/";

double rel_l2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double g = got.f32()[i], w = want.f32()[i];
    num += (g - w) * (g - w);
    den += w * w;
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

void shapes_against_cpu(const std::string& model, const std::vector<DimValues>& shapes) {
  CAPTURE(model);
  SessionOptions co;
  co.seeded = true;
  auto cpu = Session::load(kModels + model + ".yaml", co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  emu::clear_violations();
  SessionOptions go = co;
  go.device = "cuda";
  auto gpu = Session::load(kModels + model + ".yaml", go);
  REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
  std::set<std::string> seen;
  for (const DimValues& dims : shapes) {
    CAPTURE(dims_str(dims));
    const TensorMap in = (*cpu)->seeded_inputs(5, dims);
    auto want = (*cpu)->run(in);
    REQUIRE_MESSAGE(want.ok(), want.status().to_string());
    for (int rep = 0; rep < 2; ++rep) {  // eager (or a replay when revisited), then the CUDA Graph
      CAPTURE(rep);
      const int64_t launches = emu::counters().graph_launches;
      auto got = (*gpu)->run(in);
      // Every run after a shape's first replays (or captures and launches) that shape's graph.
      const bool first_at_shape = rep == 0 && seen.insert(dims_str(dims)).second;
      CHECK(emu::counters().graph_launches - launches == (first_at_shape ? 0 : 1));
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      for (const auto& [name, t] : *want) {
        CAPTURE(name);
        REQUIRE(got->at(name).shape() == t.shape());
        CHECK(rel_l2(got->at(name), t) <= 1e-5);
      }
    }
  }
  CHECK((*gpu)->stats().shape_cache_misses >= 1);
  const std::vector<std::string> v = emu::violations();
  std::ostringstream vs;
  for (size_t i = 0; i < v.size() && i < 20; ++i) vs << "\n  " << v[i];
  CHECK_MESSAGE(v.empty(), v.size() << " emulation violations:" << vs.str());
}

}  // namespace

TEST_CASE("emu.shapes: transformer_block at several batches and sequence lengths, revisited") {
  shapes_against_cpu("transformer_block", {{{"batch", 3}, {"seq", 7}},
                                           {{"batch", 1}, {"seq", 64}},
                                           {{"batch", 2}, {"seq", 64}},  // the opt point
                                           {{"batch", 3}, {"seq", 7}}});
}

TEST_CASE("emu.shapes: branch_merge (cross group) at batches 3, 1 and 3 again") {
  shapes_against_cpu("branch_merge", {{{"batch", 3}}, {{"batch", 1}}, {{"batch", 3}}});
}
