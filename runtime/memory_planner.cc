// Greedy-by-size arena placement over liveness intervals.
#include "runtime/memory_planner.h"

#include <algorithm>

namespace fusert {

namespace {
constexpr size_t kAlign = 64;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

// Alias steps (views) share their source's buffer: liveness is tracked on the root value.
static std::vector<ValueId> alias_roots(const Graph& g, const ExecutionPlan& plan) {
  std::vector<ValueId> root(g.values.size());
  for (size_t i = 0; i < root.size(); ++i) root[i] = static_cast<ValueId>(i);
  for (const Step& s : plan.steps) {
    if (s.alias_of != kNoValue) root[static_cast<size_t>(s.outputs[0])] = root[static_cast<size_t>(s.alias_of)];
  }
  return root;
}

void plan_memory(const Graph& g, ExecutionPlan& plan) {
  const int last = static_cast<int>(plan.steps.size()) - 1;
  std::vector<BufferSlot>& slots = plan.slots;
  slots.assign(g.values.size(), BufferSlot{});
  const std::vector<ValueId> root = alias_roots(g, plan);
  std::vector<bool> used(g.values.size(), false);
  std::vector<int> reads(g.values.size(), 0);
  std::vector<bool> written(g.values.size(), false);
  auto slot = [&](ValueId id) -> BufferSlot& { return slots[static_cast<size_t>(root[static_cast<size_t>(id)])]; };
  for (ValueId id : g.inputs) {
    used[static_cast<size_t>(id)] = true;
    slots[static_cast<size_t>(id)].first_step = 0;
    slots[static_cast<size_t>(id)].last_step = 0;
  }
  for (int s = 0; s <= last; ++s) {
    const Step& st = plan.steps[static_cast<size_t>(s)];
    for (ValueId id : st.outputs) {
      ValueId r = root[static_cast<size_t>(id)];
      if (g.value(r).is_initializer) continue;
      BufferSlot& b = slot(id);
      if (!used[static_cast<size_t>(r)]) b.first_step = s;
      used[static_cast<size_t>(r)] = true;
      if (st.alias_of == kNoValue) written[static_cast<size_t>(id)] = true;
      b.last_step = std::max(b.last_step, s);
    }
    std::vector<ValueId> read_here;  // roots this step reads: Add(a, a) reads a once
    for (ValueId id : st.inputs) {
      const ValueId r = root[static_cast<size_t>(id)];
      if (g.value(r).is_initializer) continue;
      slot(id).last_step = std::max(slot(id).last_step, s);
      if (st.alias_of != kNoValue || std::find(read_here.begin(), read_here.end(), r) != read_here.end()) continue;
      read_here.push_back(r);
      ++reads[static_cast<size_t>(r)];
    }
  }
  for (ValueId id : g.outputs) slot(id).last_step = std::max(last, 0);

  std::vector<bool> root_is_output(g.values.size(), false);
  for (ValueId id : g.outputs) root_is_output[static_cast<size_t>(root[static_cast<size_t>(id)])] = true;
  std::vector<ValueId> order;
  plan.naive_activation_bytes = 0;
  plan.intermediate_bytes = 0;
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!used[i]) continue;
    const Value& v = g.values[i];
    size_t bytes = static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype);
    slots[i].bytes = bytes;
    plan.naive_activation_bytes += align_up(bytes);
    bool output = root_is_output[i];
    if (reads[i] > 0 && !output && !v.is_graph_input)
      plan.intermediate_bytes += bytes * (1 + static_cast<size_t>(reads[i]));
    order.push_back(static_cast<ValueId>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](ValueId a, ValueId b) {
    return slots[static_cast<size_t>(a)].bytes > slots[static_cast<size_t>(b)].bytes;
  });
  std::vector<ValueId> placed;
  size_t arena = 0;
  for (ValueId id : order) {
    BufferSlot& b = slots[static_cast<size_t>(id)];
    // Collect placed buffers whose lifetimes overlap, by offset; take the smallest gap that fits.
    std::vector<std::pair<size_t, size_t>> busy;
    for (ValueId p : placed) {
      const BufferSlot& o = slots[static_cast<size_t>(p)];
      if (o.first_step <= b.last_step && b.first_step <= o.last_step)
        busy.emplace_back(o.offset, o.offset + align_up(o.bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t need = align_up(b.bytes), best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo >= cursor && lo - cursor >= need && lo - cursor < best_gap) {
        best = cursor;
        best_gap = lo - cursor;
      }
      cursor = std::max(cursor, hi);
    }
    b.offset = best != SIZE_MAX ? best : cursor;
    arena = std::max(arena, b.offset + need);
    placed.push_back(id);
  }
  plan.arena_bytes = arena;
  for (size_t i = 0; i < slots.size(); ++i) {
    slots[i].root = root[i];
    if (root[i] != static_cast<ValueId>(i)) {
      const BufferSlot& r = slots[static_cast<size_t>(root[i])];
      slots[i].offset = r.offset;
      slots[i].bytes = static_cast<size_t>(shape_numel(g.values[i].shape)) * dtype_size(g.values[i].dtype);
      slots[i].first_step = r.first_step;
      slots[i].last_step = r.last_step;
    }
  }
}

}  // namespace fusert
