// Register pressure as fusion rules (register_pressure.h): the estimate on the CPU, nvJitLink's
// measured counts through the backend's probe on CUDA.
#include "graph/fusion/register_pressure.h"

#include <algorithm>
#include <string>
#include <utility>

#include "graph/fusion/cost_model.h"

namespace fusert {

// CUDA: the real register count and spills of the kernel the grown chain would compile to
// (nvJitLink's report, through the runtime's probe) against the full-occupancy budget.
// A split only helps when the pieces are lighter: the candidate is refused when its kernel
// spills (and the pieces' kernels do not) or exceeds the budget and needs more registers than
// the kernels the pieces would run anyway (the chain so far, and the next op alone).
FusionDecision check_measured_registers(const FusionOptions& opt, const Graph& g, const std::vector<int>& grown,
                                        GroupKind kind, GroupKind chain_kind) {
  const int next = grown.back();
  if (!opt.measure_registers) return FusionDecision::yes();
  int regs = 0, spill = 0;
  std::string kernel;
  if (!opt.measure_registers(g, kind, grown, &regs, &spill, &kernel)) return FusionDecision::yes();
  if (regs < 0)
    return refuse("backend") << "no " << opt.backend << " kernel for depth " << grown.size() << ": " << kernel;
  int piece_regs = 0, piece_spill = 0;
  std::vector<int> chain(grown.begin(), grown.end() - 1);
  const GroupKind single = GroupKind::kSingle;
  for (const auto& [nodes, k] : {std::make_pair(chain, chain.size() > 1 ? chain_kind : single),
                                 std::make_pair(std::vector<int>{next}, single)}) {
    int r = 0, s = 0;
    std::string name;
    if (opt.measure_registers(g, k, nodes, &r, &s, &name) && r > 0) {
      piece_regs = std::max(piece_regs, r);
      piece_spill = std::max(piece_spill, s);
    }
  }
  const bool spills = spill > 0 && piece_spill == 0;
  const bool heavy = regs > opt.measured_register_budget && regs > piece_regs;
  if (spills || heavy) {
    return refuse("register_pressure") << "register pressure (measured, nvJitLink sm_90): depth " << grown.size()
                                       << " kernel " << kernel << " uses " << regs << " registers, " << spill
                                       << " spill bytes > budget " << opt.measured_register_budget
                                       << " registers, 0 spills (split kernels: at most " << piece_regs
                                       << " registers, " << piece_spill << " spill bytes); chain split before '"
                                       << g.nodes[static_cast<size_t>(next)].name << "'";
  }
  return FusionDecision::yes();
}

// The estimated register pressure of the grown chain against the budget (the CPU's vector
// registers; CUDA measures instead: check_measured_registers).
FusionDecision check_register_estimate(const FusionOptions& opt, const Graph& g, const std::vector<int>& grown) {
  const int regs = register_estimate(g, grown);
  if (opt.measure_registers || grown.size() < 5 || regs <= opt.register_budget) return FusionDecision::yes();
  return refuse("register_pressure") << "register pressure: depth " << grown.size() << " (high) needs ~" << regs
                                     << " registers > budget " << opt.register_budget << "; chain split before '"
                                     << g.nodes[static_cast<size_t>(grown.back())].name << "'";
}

}  // namespace fusert
