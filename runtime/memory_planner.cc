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

namespace {

// Liveness of every root over the steps (graph inputs from step 0, graph outputs to the last
// step), into slots[root]; used[root] and reads[root] (reading steps) for the placement.
struct Liveness {
  std::vector<bool> used;
  std::vector<int> reads;
};

Liveness liveness(const Graph& g, const ExecutionPlan& plan, const std::vector<ValueId>& root,
                  std::vector<BufferSlot>& slots) {
  const int last = static_cast<int>(plan.steps.size()) - 1;
  slots.assign(g.values.size(), BufferSlot{});
  Liveness l{std::vector<bool>(g.values.size(), false), std::vector<int>(g.values.size(), 0)};
  auto slot = [&](ValueId id) -> BufferSlot& { return slots[static_cast<size_t>(root[static_cast<size_t>(id)])]; };
  for (ValueId id : g.inputs) {
    l.used[static_cast<size_t>(id)] = true;
    slots[static_cast<size_t>(id)].first_step = 0;
    slots[static_cast<size_t>(id)].last_step = 0;
  }
  for (int s = 0; s <= last; ++s) {
    const Step& st = plan.steps[static_cast<size_t>(s)];
    for (ValueId id : st.outputs) {
      ValueId r = root[static_cast<size_t>(id)];
      if (g.value(r).is_initializer) continue;
      BufferSlot& b = slot(id);
      if (!l.used[static_cast<size_t>(r)]) b.first_step = s;
      l.used[static_cast<size_t>(r)] = true;
      b.last_step = std::max(b.last_step, s);
    }
    std::vector<ValueId> read_here;  // roots this step reads: Add(a, a) reads a once
    for (ValueId id : st.inputs) {
      const ValueId r = root[static_cast<size_t>(id)];
      if (g.value(r).is_initializer) continue;
      slot(id).last_step = std::max(slot(id).last_step, s);
      if (st.alias_of != kNoValue || std::find(read_here.begin(), read_here.end(), r) != read_here.end()) continue;
      read_here.push_back(r);
      ++l.reads[static_cast<size_t>(r)];
    }
  }
  for (ValueId id : g.outputs) slot(id).last_step = std::max(last, 0);
  return l;
}

size_t value_bytes(const Value& v) { return static_cast<size_t>(shape_numel(v.shape)) * dtype_size(v.dtype); }

// Step::in_place_of: the output (and its views) takes the root of the input it overwrites, in
// step order, so that a chain of in-place steps shares one buffer. True when any merged.
bool merge_in_place(const Graph& g, const ExecutionPlan& plan, std::vector<ValueId>& root,
                    std::vector<BufferSlot>& slots) {
  std::vector<bool> outside(g.values.size(), false);  // graph inputs and outputs: never overwritten
  for (ValueId id : g.inputs) outside[static_cast<size_t>(root[static_cast<size_t>(id)])] = true;
  for (ValueId id : g.outputs) outside[static_cast<size_t>(root[static_cast<size_t>(id)])] = true;
  bool merged = false;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& st = plan.steps[s];
    if (st.in_place_of == kNoValue || st.alias_of != kNoValue || st.outputs.size() != 1) continue;
    const ValueId r = root[static_cast<size_t>(st.in_place_of)], o = root[static_cast<size_t>(st.outputs[0])];
    const Value &rv = g.value(r), &ov = g.value(o);
    if (r == o || rv.is_initializer || ov.is_initializer || outside[static_cast<size_t>(r)] ||
        outside[static_cast<size_t>(o)] || value_bytes(rv) != value_bytes(ov))
      continue;
    BufferSlot &rs = slots[static_cast<size_t>(r)], &os = slots[static_cast<size_t>(o)];
    if (rs.last_step != static_cast<int>(s) || os.first_step != static_cast<int>(s)) continue;
    int roles = 0;
    for (ValueId id : st.inputs) roles += root[static_cast<size_t>(id)] == r;
    if (roles != 1) continue;
    for (ValueId& v : root)
      if (v == o) v = r;
    rs.last_step = os.last_step;
    merged = true;
  }
  return merged;
}

// The figures without reuse (each value its own buffer, in-place outputs too): the sum of the
// activation sizes, and the bytes written and read between steps.
void traffic_figures(const Graph& g, const std::vector<ValueId>& root, const Liveness& l, ExecutionPlan& plan) {
  std::vector<bool> root_is_output(g.values.size(), false);
  for (ValueId id : g.outputs) root_is_output[static_cast<size_t>(root[static_cast<size_t>(id)])] = true;
  plan.naive_activation_bytes = 0;
  plan.intermediate_bytes = 0;
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!l.used[i]) continue;
    const Value& v = g.values[i];
    const size_t bytes = value_bytes(v);
    plan.naive_activation_bytes += align_up(bytes);
    if (l.reads[i] > 0 && !root_is_output[i] && !v.is_graph_input)
      plan.intermediate_bytes += bytes * (1 + static_cast<size_t>(l.reads[i]));
  }
}

}  // namespace

void plan_memory(const Graph& g, ExecutionPlan& plan) {
  std::vector<BufferSlot>& slots = plan.slots;
  std::vector<ValueId> root = alias_roots(g, plan);
  Liveness l = liveness(g, plan, root, slots);
  traffic_figures(g, root, l, plan);
  if (merge_in_place(g, plan, root, slots)) l = liveness(g, plan, root, slots);
  std::vector<ValueId> order;
  for (size_t i = 0; i < g.values.size(); ++i) {
    if (!l.used[i]) continue;
    slots[i].bytes = value_bytes(g.values[i]);
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
