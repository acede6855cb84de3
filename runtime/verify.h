// --verify: every fused group checked against the unfused CPU path on the same inputs.
#pragma once

#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert {

struct GroupCheck {
  std::string group;   ///< step name, e.g. "vertical:layer1.0.conv1+1"
  std::string kernel;  ///< fused kernel used
  int nodes = 0;
  double max_abs = 0;         ///< max |fused - unfused| over the group's outputs
  double rel_l2 = 0;          ///< ||fused - unfused|| / ||unfused||
  bool nan_mismatch = false;  ///< NaN/Inf in one path but not the other
};

/// Runs the session's canonicalised graph unfused (every value kept), then each fused step of
/// the session alone on the unfused values of its inputs, comparing its outputs.
Result<std::vector<GroupCheck>> verify_groups(Session& s, const TensorMap& inputs);

}  // namespace fusert
