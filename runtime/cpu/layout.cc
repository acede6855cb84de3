// The CPU backend's layout pass: an activation written by a oneDNN convolution and read only by
// oneDNN convolutions that all prefer the same dense layout (NHWC for the brgconv kernels) stays
// in that layout; the reorder out of the producer and into every consumer disappear. A buffer
// read by anything else (another kernel, an epilogue operand, a view, the caller as a graph
// output) stays NCHW. The layouts have the size of NCHW, so the memory plan is unchanged.
#include <map>

#include "runtime/cpu/lower_cpu.h"

namespace fusert {

int assign_native_layouts(const Graph& g, std::vector<Step>& steps) {
  std::map<ValueId, std::vector<size_t>> readers;  // value -> steps that read it
  std::map<ValueId, bool> viewed;                  // value -> a view aliases its buffer
  for (size_t i = 0; i < steps.size(); ++i) {
    for (ValueId v : steps[i].inputs) readers[v].push_back(i);
    if (steps[i].alias_of != kNoValue) viewed[steps[i].alias_of] = true;
  }
  std::vector<bool> in(steps.size(), false), out(steps.size(), false);
  int kept = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const NativeLayout* p = steps[i].native.get();
    if (!p || p->output_strides.empty()) continue;
    const ValueId y = p->output;
    if (g.value(y).is_graph_output || viewed.count(y) || !readers.count(y)) continue;
    bool ok = true;
    for (size_t r : readers[y]) {
      const NativeLayout* c = steps[r].native.get();
      ok &= c && c->input == y && c->input_strides == p->output_strides;
    }
    if (!ok) continue;
    out[i] = true;
    for (size_t r : readers[y]) in[r] = true;
    ++kept;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!in[i] && !out[i]) continue;
    steps[i].native->use(in[i], out[i]);
    steps[i].native->input_used = in[i];
    steps[i].native->output_used = out[i];
    steps[i].detail +=
        std::string("; reorders removed (layout kept native):") + (in[i] ? " in" : "") + (out[i] ? " out" : "");
  }
  return kept;
}

}  // namespace fusert
