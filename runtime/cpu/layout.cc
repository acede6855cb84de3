// The CPU backend's layout pass: an activation written by a oneDNN convolution and read only by
// oneDNN convolutions (or pooling, or a channel Concat, which takes any layout in and writes the
// layout its own readers share) that all accept the producer's layout (NHWC for the AVX-512 brgconv
// kernels; nChw8c, unpadded, for the AVX2 jit kernels) stays in that layout; the reorder out of the producer and into
// every consumer disappear. A consumer accepts it as its source, or as the residual its sum post-op adds (copied into
// the destination as it is when the destination has the same layout, reordered there otherwise). A buffer read by
// anything else (another kernel, another epilogue operand, a view, the caller as a graph output) stays NCHW. The
// layouts have the size of NCHW, so the memory plan is unchanged. Steps that follow their inputs'
// layout (elementwise ops, BatchNormalization, GlobalAveragePool, Resize: layout_follow.h) read
// any channel-blocked layout and write the layout of their first native input (or, where their
// readers ask for another, that one), so the chain conv -> BN -> ReLU -> Mul -> Add -> conv needs
// no reorder either.
#include <map>

#include "kernels/cpu/blocked.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert {

namespace {

// The channel block of `strides` for value v (kernels/cpu/blocked.h), 0 when it has none.
int64_t block_of_value(const Graph& g, ValueId v, const std::vector<int64_t>& strides) {
  const Shape& s = g.value(v).shape;
  return s.size() == 4 ? cpu::block_of(strides, s[1], s[2], s[3]) : 0;
}

// Whether step `c` reads `v` only in roles that accept the layout `strides`.
bool accepts(const Graph& g, const Step& c, ValueId v, const std::vector<int64_t>& strides) {
  const NativeLayout* n = c.native.get();
  if (!n) return false;
  bool listed = false;
  for (const NativeLayout::Read& r : n->reads) {
    if (r.value != v) continue;
    listed = true;
    if (!r.any && r.strides != strides) return false;
    if (r.any && n->follows && block_of_value(g, v, strides) <= 0) return false;
  }
  return listed;  // not listed: read some other way (e.g. a binary post-op operand)
}

// `strides` of value `from` carried over to value `to`: NHWC stays NHWC, a channel block stays
// that block; empty for NCHW, a layout with no channel block, or a block `to` cannot hold.
std::vector<int64_t> carried(const Graph& g, ValueId from, const std::vector<int64_t>& strides, ValueId to) {
  const Shape& ts = g.value(to).shape;
  if (ts.size() != 4) return {};
  const int64_t b = block_of_value(g, from, strides), c = g.value(from).shape[1];
  if (b <= 1) return {};
  const int64_t out_b = b == c ? ts[1] : b;
  if (ts[1] % out_b != 0) return {};
  return cpu::blocked_strides(out_b, ts[1], ts[2], ts[3]);
}

// The layout of a step's first read kept native, carried over to its output `y`.
std::vector<int64_t> inputs_layout(const Graph& g, const NativeLayout& n, ValueId y) {
  for (const NativeLayout::Read& r : n.reads)
    if (r.used) return carried(g, r.value, r.strides, y);
  return {};
}

using Readers = std::map<ValueId, std::vector<size_t>>;

// The layout the readers of `v` ask for, for an output that takes any layout: the first reader
// that asks for one, else (up to `depth` steps on) what the readers of a reader that follows its
// input ask for, carried back to v; empty when none asks. accepts() checks every reader.
std::vector<int64_t> wanted_layout(const Graph& g, const std::vector<Step>& steps, const Readers& readers, ValueId v,
                                   int depth) {
  auto it = readers.find(v);
  if (it == readers.end()) return {};
  for (size_t r : it->second) {
    const NativeLayout* n = steps[r].native.get();
    for (size_t k = 0; n && k < n->reads.size(); ++k)
      if (n->reads[k].value == v && !n->reads[k].any) return n->reads[k].strides;
  }
  for (size_t r = 0; depth > 0 && r < it->second.size(); ++r) {
    const NativeLayout* n = steps[it->second[r]].native.get();
    if (!n || !n->follows || n->output == kNoValue) continue;
    const std::vector<int64_t> s = wanted_layout(g, steps, readers, n->output, depth - 1);
    if (!s.empty()) return carried(g, n->output, s, v);
  }
  return {};
}

}  // namespace

int assign_native_layouts(const Graph& g, std::vector<Step>& steps) {
  Readers readers;                 // value -> steps that read it
  std::map<ValueId, bool> viewed;  // value -> a view aliases its buffer
  for (size_t i = 0; i < steps.size(); ++i) {
    for (ValueId v : steps[i].inputs) readers[v].push_back(i);
    if (steps[i].alias_of != kNoValue) viewed[steps[i].alias_of] = true;
  }
  std::vector<bool> touched(steps.size(), false);
  int kept = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    NativeLayout* p = steps[i].native.get();
    if (!p) continue;
    const ValueId y = p->output;
    if (y == kNoValue || g.value(y).is_graph_output || viewed.count(y) || !readers.count(y)) continue;
    if (p->output_any) p->output_strides = wanted_layout(g, steps, readers, y, 3);
    if (p->follows || (p->output_any && p->output_strides.empty())) p->output_strides = inputs_layout(g, *p, y);
    if (p->output_strides.empty()) continue;
    bool ok = true;
    for (size_t r : readers[y]) ok &= accepts(g, steps[r], y, p->output_strides);
    if (!ok && p->follows) {
      // The readers ask for another layout (a oneDNN 1x1 convolution's NHWC after a 1x1 +
      // depthwise block's nChw16c): the step writes theirs, converting its inputs as it runs, one
      // pass instead of a reorder to NCHW out of it and another into the reader.
      const std::vector<int64_t> w = wanted_layout(g, steps, readers, y, 3);
      if (!w.empty() && block_of_value(g, y, w) > 0) {
        p->output_strides = w;
        ok = true;
        for (size_t r : readers[y]) ok &= accepts(g, steps[r], y, w);
      }
    }
    if (!ok) {
      if (p->output_any || p->follows) p->output_strides.clear();
      continue;
    }
    p->output_used = true;
    touched[i] = true;
    for (size_t r : readers[y]) {
      for (NativeLayout::Read& rd : steps[r].native->reads) {
        if (rd.value != y) continue;
        rd.used = true;
        if (rd.any) rd.strides = p->output_strides;
      }
      touched[r] = true;
    }
    ++kept;
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    if (!touched[i]) continue;
    const NativeLayout& n = *steps[i].native;
    n.apply(n);
    if (n.describe) steps[i].detail = n.describe();
    std::string what;
    for (const NativeLayout::Read& rd : n.reads)
      if (rd.used) what += " " + g.value(rd.value).name;
    if (steps[i].detail.empty()) steps[i].detail = "own kernel " + steps[i].kernel + " (follows its inputs' layout)";
    steps[i].detail +=
        "; reorders removed (layout kept native):" + (what.empty() ? "" : " in" + what) + (n.output_used ? " out" : "");
  }
  return kept;
}

}  // namespace fusert
