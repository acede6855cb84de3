// Liveness arena planning on small graphs whose lifetimes, arena size and intermediate traffic
// are counted by hand; every plan is also checked for the invariant that values alive at the
// same step never share bytes.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "graph/loader/model_loader.h"
#include "runtime/memory_planner.h"
#include "runtime/session.h"
#include "tests/runtime/runtime_test_util.h"

using namespace fusert;
using fusert::test::scratch;
using fusert::test::write_file;

namespace {

struct Planned {
  ModelSpec model;
  ExecutionPlan plan;
  const BufferSlot& slot(const std::string& name) const {
    ValueId id = model.graph.find_value(name);
    REQUIRE(id != kNoValue);
    return plan.slots[static_cast<size_t>(id)];
  }
};

// `body` holds the inputs/outputs/nodes keys of a model.
Planned plan_of(const std::string& body) {
  Planned p;
  auto m = load_model_from_string("fusert: 1\nname: mp\n" + body, "mp.yaml");
  INFO(body);
  REQUIRE(m.ok());
  p.model = std::move(m).value();
  auto steps = lower_graph_cpu(p.model.graph);
  REQUIRE(steps.ok());
  p.plan.steps = std::move(steps).value();
  plan_memory(p.model.graph, p.plan);
  return p;
}

// Every pair of activations alive at a common step occupies disjoint bytes; offsets are
// 64-byte aligned and inside the arena.
void check_no_overlap(const Planned& p) {
  const auto& slots = p.plan.slots;
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].bytes == 0) continue;
    CHECK(slots[i].offset % 64 == 0);
    CHECK(slots[i].offset + slots[i].bytes <= p.plan.arena_bytes);
    for (size_t j = i + 1; j < slots.size(); ++j) {
      if (slots[j].bytes == 0 || slots[j].root == slots[i].root) continue;  // one buffer (a view, in place)
      const BufferSlot& a = slots[i];
      const BufferSlot& b = slots[j];
      bool live_together = a.first_step <= b.last_step && b.first_step <= a.last_step;
      bool bytes_overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      INFO(p.model.graph.values[i].name << " and " << p.model.graph.values[j].name);
      CHECK_FALSE((live_together && bytes_overlap));
    }
  }
}

constexpr size_t kB = 64 * 4;  // bytes of a [1, 64] f32 tensor (already 64-byte aligned)

}  // namespace

TEST_CASE("a chain a -> b -> c -> d of equal sizes needs an arena of two buffers") {
  Planned p = plan_of(R"(inputs: [{name: a, shape: [1, 64]}]
outputs: [d]
nodes:
  - {name: r1, op: Relu, inputs: [a], outputs: [b]}
  - {name: r2, op: Sigmoid, inputs: [b], outputs: [c]}
  - {name: r3, op: Relu, inputs: [c], outputs: [d]}
)");
  REQUIRE(p.plan.steps.size() == 3);
  // Lifetimes: a [0, 0], b [0, 1], c [1, 2], d [2, 2].
  CHECK(p.slot("a").first_step == 0);
  CHECK(p.slot("a").last_step == 0);
  CHECK(p.slot("b").first_step == 0);
  CHECK(p.slot("b").last_step == 1);
  CHECK(p.slot("c").first_step == 1);
  CHECK(p.slot("c").last_step == 2);
  CHECK(p.slot("d").first_step == 2);
  CHECK(p.slot("d").last_step == 2);
  CHECK(p.plan.arena_bytes == 2 * kB);
  CHECK(p.plan.naive_activation_bytes == 4 * kB);
  // a and c share memory, b and d share memory.
  CHECK(p.slot("a").offset == p.slot("c").offset);
  CHECK(p.slot("b").offset == p.slot("d").offset);
  CHECK(p.slot("a").offset != p.slot("b").offset);
  // b and c are each written once and read once; a is an input, d an output: 2 * 2 * kB.
  CHECK(p.plan.intermediate_bytes == 4 * kB);
  check_no_overlap(p);
}

TEST_CASE("a diamond keeps both branches alive until the join") {
  Planned p = plan_of(R"(inputs: [{name: x, shape: [1, 64]}]
outputs: [d]
nodes:
  - {name: s0, op: Relu, inputs: [x], outputs: [a]}
  - {name: left, op: Sigmoid, inputs: [a], outputs: [b]}
  - {name: right, op: Relu, inputs: [a], outputs: [c]}
  - {name: join, op: Add, inputs: [b, c], outputs: [d]}
)");
  // a [0, 2] (read by steps 1 and 2), b [1, 3], c [2, 3], d [3, 3]: a, b, c all live at step 2.
  CHECK(p.slot("a").last_step == 2);
  CHECK(p.slot("b").last_step == 3);
  CHECK(p.slot("c").first_step == 2);
  CHECK(p.plan.arena_bytes == 3 * kB);
  CHECK(p.slot("b").offset != p.slot("c").offset);
  CHECK(p.slot("a").offset != p.slot("b").offset);
  CHECK(p.slot("a").offset != p.slot("c").offset);
  // a: 1 write + 2 reads; b and c: 1 write + 1 read each.
  CHECK(p.plan.intermediate_bytes == (3 + 2 + 2) * kB);
  check_no_overlap(p);
}

TEST_CASE("a value read twice by one step counts one read") {
  Planned p = plan_of(R"(inputs: [{name: x, shape: [1, 64]}]
outputs: [y]
nodes:
  - {name: r, op: Relu, inputs: [x], outputs: [a]}
  - {name: sq, op: Mul, inputs: [a, a], outputs: [y]}
)");
  CHECK(p.plan.intermediate_bytes == 2 * kB);
  check_no_overlap(p);
}

TEST_CASE("graph outputs stay alive to the end and are never overwritten") {
  const std::string body = R"(inputs: [{name: x, shape: [1, 64]}]
outputs: [early, late]
nodes:
  - {name: e, op: Relu, inputs: [x], outputs: [early]}
  - {name: t1, op: Sigmoid, inputs: [early], outputs: [t1]}
  - {name: t2, op: Relu, inputs: [t1], outputs: [t2]}
  - {name: t3, op: Sigmoid, inputs: [t2], outputs: [late]}
)";
  Planned p = plan_of(body);
  CHECK(p.slot("early").first_step == 0);
  CHECK(p.slot("early").last_step == 3);
  for (const char* other : {"t1", "t2", "late"}) {
    INFO(other);
    const BufferSlot& o = p.slot(other);
    const BufferSlot& e = p.slot("early");
    CHECK((o.offset >= e.offset + e.bytes || e.offset >= o.offset + o.bytes));
  }
  // early is read (by t1) but, as a graph output, is not counted as an intermediate.
  CHECK(p.plan.intermediate_bytes == 2 * 2 * kB);
  check_no_overlap(p);

  // End to end: early = relu(x) survives the three later steps.
  std::string path = scratch("outputs_alive.yaml");
  write_file(path, "fusert: 1\nname: mp\n" + body);
  auto s = Session::load(path, SessionOptions());
  REQUIRE(s.ok());
  std::vector<float> xv(64);
  for (int i = 0; i < 64; ++i) xv[static_cast<size_t>(i)] = static_cast<float>(i - 32) / 8.f;
  auto out = (*s)->run({{"x", Tensor::f32({1, 64}, xv)}});
  REQUIRE(out.ok());
  const Tensor& early = out->at("early");
  for (int i = 0; i < 64; ++i) {
    INFO(i);
    CHECK(early.f32()[i] == (i < 32 ? 0.f : static_cast<float>(i - 32) / 8.f));
  }
  // late = sigmoid(relu(sigmoid(relu(x)))): for x = 0 (i = 32): sigmoid(relu(0.5)) = sigmoid(0.5).
  CHECK(out->at("late").f32()[32] == doctest::Approx(1.0 / (1.0 + std::exp(-0.5))).epsilon(1e-6));
}

// Marks the step computing `node` as writing over `value` (Step::in_place_of), then plans again.
void in_place(Planned& p, const std::string& node, const std::string& value) {
  for (Step& st : p.plan.steps)
    if (st.name == node) st.in_place_of = p.model.graph.find_value(value);
  plan_memory(p.model.graph, p.plan);
}

TEST_CASE("an in-place step takes the buffer of the input it reads last, and only that") {
  const std::string body = R"(inputs: [{name: x, shape: [1, 64]}]
outputs: [y]
nodes:
  - {name: r0, op: Relu, inputs: [x], outputs: [a]}
  - {name: r1, op: Sigmoid, inputs: [a], outputs: [b]}
  - {name: add, op: Add, inputs: [b, a], outputs: [c]}
  - {name: r2, op: Relu, inputs: [c], outputs: [d]}
  - {name: add2, op: Add, inputs: [d, c], outputs: [e]}
  - {name: r3, op: Sigmoid, inputs: [e], outputs: [y]}
)";
  Planned p = plan_of(body);
  const size_t traffic = p.plan.intermediate_bytes, naive = p.plan.naive_activation_bytes;
  CHECK(p.slot("c").root == p.model.graph.find_value("c"));
  in_place(p, "add", "a");
  in_place(p, "add2", "c");
  // c writes over a (read last by add), e over c: one buffer from step 0 to 5 (y reads e).
  const ValueId a = p.model.graph.find_value("a");
  CHECK(p.slot("c").root == a);
  CHECK(p.slot("e").root == a);
  CHECK(p.slot("c").offset == p.slot("a").offset);
  CHECK(p.slot("e").offset == p.slot("a").offset);
  CHECK(p.slot("a").first_step == 0);
  CHECK(p.slot("a").last_step == 5);
  CHECK(p.slot("b").offset != p.slot("a").offset);
  CHECK(p.slot("d").offset != p.slot("a").offset);
  // The figures without reuse count every value still.
  CHECK(p.plan.intermediate_bytes == traffic);
  CHECK(p.plan.naive_activation_bytes == naive);
  check_no_overlap(p);
}

TEST_CASE("an in-place step keeps its own buffer where the input lives on or is not its to overwrite") {
  // a is read after add (by r2); x is the graph input; y, the graph output, may not take b;
  // sq reads b twice (as both operands), so it cannot write over it.
  Planned p = plan_of(R"(inputs: [{name: x, shape: [1, 64]}]
outputs: [y]
nodes:
  - {name: r0, op: Relu, inputs: [x], outputs: [a]}
  - {name: r1, op: Sigmoid, inputs: [a], outputs: [b]}
  - {name: add, op: Add, inputs: [b, a], outputs: [c]}
  - {name: r2, op: Relu, inputs: [a], outputs: [d]}
  - {name: sq, op: Mul, inputs: [c, c], outputs: [f]}
  - {name: fromx, op: Add, inputs: [f, x], outputs: [g]}
  - {name: out, op: Add, inputs: [g, d], outputs: [y]}
)");
  in_place(p, "add", "a");
  in_place(p, "sq", "c");
  in_place(p, "fromx", "x");
  in_place(p, "out", "d");
  for (const char* v : {"c", "f", "g", "y"}) {
    INFO(v);
    CHECK(p.slot(v).root == p.model.graph.find_value(v));
  }
  check_no_overlap(p);
}

TEST_CASE("mixed sizes: a small buffer reuses the gap left by a large one (best fit)") {
  // x [1, 4, 8, 8] = 1024 B; p, q, r, y are 256 B each.
  // Lifetimes: x [0, 0], p [0, 1], q [1, 2], r [2, 3], y [3, 3]. Peak at step 0: x + p.
  Planned p = plan_of(R"(inputs: [{name: x, shape: [1, 4, 8, 8]}]
outputs: [y]
nodes:
  - {name: pool, op: MaxPool, inputs: [x], outputs: [p], attrs: {kernel_shape: [2, 2], strides: [2, 2]}}
  - {name: relu, op: Relu, inputs: [p], outputs: [q]}
  - {name: flat, op: Flatten, inputs: [q], outputs: [r]}
  - {name: out, op: Sigmoid, inputs: [r], outputs: [y]}
)");
  CHECK(p.slot("x").bytes == 1024);
  CHECK(p.slot("p").bytes == 256);
  CHECK(p.plan.arena_bytes == 1024 + 256);
  CHECK(p.plan.naive_activation_bytes == 1024 + 4 * 256);
  CHECK(p.slot("q").offset < 1024);  // inside x's dead space
  CHECK(p.plan.intermediate_bytes == 3 * 2 * 256);
  check_no_overlap(p);
}

TEST_CASE("unaligned sizes are rounded to 64 bytes in the arena but not in the traffic count") {
  // x [1, 5] = 20 B; each activation takes a 64-byte slot.
  Planned p = plan_of(R"(inputs: [{name: x, shape: [1, 5]}]
outputs: [z]
nodes:
  - {name: a, op: Relu, inputs: [x], outputs: [y]}
  - {name: b, op: Relu, inputs: [y], outputs: [z]}
)");
  CHECK(p.slot("y").bytes == 20);
  CHECK(p.plan.arena_bytes == 128);
  CHECK(p.plan.naive_activation_bytes == 3 * 64);
  CHECK(p.plan.intermediate_bytes == 40);
  check_no_overlap(p);
}

TEST_CASE("the resnet18 plan reuses memory and keeps live values apart") {
  auto m = load_model(FUSERT_SOURCE_DIR "/models/resnet18.yaml");
  REQUIRE(m.ok());
  Planned p;
  p.model = std::move(m).value();
  auto steps = lower_graph_cpu(p.model.graph);
  REQUIRE(steps.ok());
  p.plan.steps = std::move(steps).value();
  plan_memory(p.model.graph, p.plan);
  CHECK(p.plan.arena_bytes < p.plan.naive_activation_bytes / 3);
  // The largest activation is the stem conv output [1, 64, 112, 112] f32; it and the input
  // [1, 3, 224, 224] are alive together at step 0.
  CHECK(p.plan.arena_bytes >= (64 * 112 * 112 + 3 * 224 * 224) * 4u);
  check_no_overlap(p);
}
