// runtime/cpu/layout_follow.h. A follow step lists its full-shape 4-D inputs as reads in any
// channel-blocked layout and its output as following them (NativeLayout::follows); the layout
// pass (layout.cc) decides. At run time the step runs its kernel in the output's block; an input
// the pass left in another layout (a graph input, a buffer also read by a plain kernel) is first
// copied into that block in per-thread scratch. Operands whose memory is the same in every block
// order (per-channel, per-pixel, scalars) are read as they are.
#include "runtime/cpu/layout_follow.h"

#include <functional>
#include <memory>

#include "kernels/cpu/blocked.h"
#include "kernels/cpu/fused_kernels.h"
#include "runtime/cpu/lower_single_util.h"

namespace fusert::cpu_lowering {
namespace {

// A follow step's kernel with every full input (`full`, in the lowering's order) and the output
// in the block it was prepared for.
using BlockedRun = std::function<void(const BufferTable& t, const std::vector<const float*>& full, float* y)>;
// Prepares the kernel for block b, once, when the layout pass has chosen (shapes, programs).
using BlockedKernel = std::function<BlockedRun(int64_t b)>;

// What the layout pass chose, set once by NativeLayout::apply.
struct Chosen {
  std::vector<std::vector<int64_t>> in;  // per full input: its strides (empty: NCHW)
  std::vector<int64_t> in_b;             // its block (kernels/cpu/blocked.h); 0: none of them
  int64_t b = 1;                         // the block the kernel runs in; 1: NCHW
  BlockedRun run;                        // empty: the pass kept everything NCHW
};

// Whether a 4-D operand's memory is the same in every block order: one channel, or one pixel.
bool layout_free(const Shape& sh) { return sh[1] == 1 || sh[2] * sh[3] == 1; }

bool plain_4d(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  return val.dtype == DType::kF32 && val.shape.size() == 4 && shape_numel(val.shape) > 0;
}

// The full inputs in block b: as they are, or copied into `scratch` from the pass's layout.
std::vector<const float*> inputs_in(const BufferTable& t, const std::vector<ValueId>& full,
                                    const std::vector<Shape>& shapes, const Chosen& c, int64_t b) {
  thread_local std::vector<std::vector<float>> scratch;
  if (scratch.size() < full.size()) scratch.resize(full.size());
  std::vector<const float*> ptrs;
  for (size_t i = 0; i < full.size(); ++i) {
    const float* x = t.f32(full[i]);
    if (c.in_b[i] != b) {
      const Shape& sh = shapes[i];
      std::vector<float>& buf = scratch[i];
      buf.resize(static_cast<size_t>(shape_numel(sh)));
      const int64_t nhw[3] = {sh[0], sh[2], sh[3]};
      const std::vector<int64_t> to = b == 1 ? std::vector<int64_t>() : cpu::blocked_strides(b, sh[1], sh[2], sh[3]);
      cpu::concat_channels(nhw, {sh[1]}, {x}, {c.in[i]}, to, buf.data());
      x = buf.data();
    }
    ptrs.push_back(x);
  }
  return ptrs;
}

// Offers `s` to the layout pass with `full` read in any block and, when `offer_output`, its
// output following them; once the pass chose a layout for any of them, `kernel` prepares the
// step's run for that block (at plan time, not per run).
void offer(const Graph& g, Step& s, const std::vector<ValueId>& full, ValueId y, bool offer_output,
           BlockedKernel kernel) {
  auto l = std::make_shared<NativeLayout>();
  l->follows = true;
  std::vector<Shape> shapes;
  for (ValueId v : full) {
    NativeLayout::Read r;
    r.value = v;
    r.any = true;
    l->reads.push_back(r);
    shapes.push_back(padded(g.value(v).shape, 4));  // a full operand may have fewer dims (a weight)
  }
  l->output = offer_output ? y : kNoValue;
  const Shape ys = g.value(y).shape;
  auto chosen = std::make_shared<Chosen>();
  l->apply = [chosen, shapes, ys, offer_output, kernel](const NativeLayout& nl) {
    chosen->in.clear();
    chosen->in_b.clear();
    for (size_t i = 0; i < nl.reads.size(); ++i) {
      const NativeLayout::Read& r = nl.reads[i];
      chosen->in.push_back(r.used ? r.strides : std::vector<int64_t>());
      chosen->in_b.push_back(cpu::block_of(chosen->in.back(), shapes[i][1], shapes[i][2], shapes[i][3]));
    }
    // Without an output in a layout (GlobalAveragePool), the kernel reads its input as it is.
    const int64_t out_b = nl.output_used ? cpu::block_of(nl.output_strides, ys[1], ys[2], ys[3]) : 1;
    chosen->b = offer_output ? out_b : (chosen->in_b[0] > 0 ? chosen->in_b[0] : 1);
    chosen->run = kernel(chosen->b);
  };
  s.native = l;
  std::function<void(const BufferTable&)> plain = std::move(s.run);
  s.run = [=](const BufferTable& t) {
    if (!chosen->run) return plain(t);
    chosen->run(t, inputs_in(t, full, shapes, *chosen, chosen->b), t.f32(y));
  };
}

}  // namespace

void follow_binary(const Graph& g, const Node& n, cpu::BinaryKind kind, Step& s) {
  const ValueId yi = n.outputs[0], ai = n.inputs[0], bi = n.inputs[1];
  if (!plain_4d(g, yi) || shape_of(g, ai).size() > 4 || shape_of(g, bi).size() > 4) return;
  const Shape out = shape_of(g, yi), as = padded(shape_of(g, ai), 4), bs = padded(shape_of(g, bi), 4);
  // An operand is full (the output's shape, read in the chosen block) or one whose memory is the
  // same in every block order (one channel, or one pixel); any other broadcast stays NCHW.
  auto full_or_free = [&](const Shape& sh, bool* full) {
    *full = sh == out;
    return *full || layout_free(sh);
  };
  bool a_full = false, b_full = false;
  if (!full_or_free(as, &a_full) || !full_or_free(bs, &b_full) || (!a_full && !b_full)) return;
  std::vector<ValueId> full;
  if (a_full) full.push_back(ai);
  if (b_full) full.push_back(bi);
  const int64_t c = out[1];
  offer(g, s, full, yi, true, [=](int64_t b) -> BlockedRun {
    const Shape o5 = cpu::blocked_shape(out, c, b), a5 = cpu::blocked_shape(as, c, b),
                b5 = cpu::blocked_shape(bs, c, b);
    return [=](const BufferTable& t, const std::vector<const float*>& x, float* y) {
      const float* pa = a_full ? x[0] : t.f32(ai);
      const float* pb = b_full ? x[a_full ? 1 : 0] : t.f32(bi);
      cpu::binary(kind, o5, a5, pa, b5, pb, y);
    };
  });
}

void follow_elementwise_program(const Graph& g, const std::vector<ValueId>& inputs, ValueId yi,
                                const cpu::ElementwiseProgram& prog, Step& s) {
  if (!plain_4d(g, yi)) return;
  const Shape out = shape_of(g, yi);
  std::vector<Shape> shapes;
  std::vector<bool> is_full;
  std::vector<ValueId> full;
  for (ValueId v : inputs) {
    if (shape_of(g, v).size() > 4) return;
    const Shape sh = padded(shape_of(g, v), 4);
    for (size_t d = 0; d < 4; ++d)
      if (sh[d] != 1 && sh[d] != out[d]) return;
    is_full.push_back(sh == out);
    if (!is_full.back() && !layout_free(sh)) return;  // a broadcast that needs NCHW
    if (is_full.back()) full.push_back(v);
    shapes.push_back(sh);
  }
  if (full.empty()) return;
  const int64_t c = out[1];
  offer(g, s, full, yi, true, [=](int64_t b) -> BlockedRun {
    cpu::ElementwiseProgram p = prog;  // the program over the block order's 5-D view
    p.out_shape = cpu::blocked_shape(out, c, b);
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::vector<int64_t> in5 = cpu::blocked_shape(shapes[i], c, b);
      p.input_strides[i].assign(in5.size(), 0);
      int64_t stride = 1;
      for (size_t d = in5.size(); d-- > 0;) {
        p.input_strides[i][d] = in5[d] == 1 ? 0 : stride;
        stride *= in5[d];
      }
    }
    return [=](const BufferTable& t, const std::vector<const float*>& x, float* y) {
      std::vector<const float*> ptrs;
      for (size_t i = 0, k = 0; i < inputs.size(); ++i) ptrs.push_back(is_full[i] ? x[k++] : t.f32(inputs[i]));
      cpu::run_elementwise_program(p, ptrs, {y});
    };
  });
}

void follow_unary(const Graph& g, const Node& n, cpu::EpOp op, float a, float b, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  if (!plain_4d(g, yi) || shape_of(g, xi) != shape_of(g, yi)) return;
  const int64_t count = shape_numel(shape_of(g, yi));
  offer(g, s, {xi}, yi, true, [=](int64_t) -> BlockedRun {
    return
        [=](const BufferTable&, const std::vector<const float*>& x, float* y) { cpu::unary(op, a, b, count, x[0], y); };
  });
}

void follow_batch_norm(const Graph& g, const Node& n, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  if (!plain_4d(g, xi) || !plain_4d(g, yi)) return;
  const Shape x = shape_of(g, xi);
  const float eps = static_cast<float>(n.attr_f("epsilon"));
  const std::vector<ValueId> in = n.inputs;
  offer(g, s, {xi}, yi, true, [=](int64_t b) -> BlockedRun {
    return [=](const BufferTable& t, const std::vector<const float*>& xs, float* y) {
      cpu::batch_norm_blocked(x[0], x[1], x[2] * x[3], b, xs[0], t.f32(in[1]), t.f32(in[2]), t.f32(in[3]), t.f32(in[4]),
                              eps, y);
    };
  });
}

void follow_global_avg_pool(const Graph& g, const Node& n, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  if (!plain_4d(g, xi)) return;
  const Shape x = shape_of(g, xi);
  offer(g, s, {xi}, yi, false, [=](int64_t b) -> BlockedRun {
    return [=](const BufferTable&, const std::vector<const float*>& xs, float* y) {
      cpu::global_avg_pool_blocked(x[0], x[1], x[2] * x[3], b, xs[0], y);
    };
  });
}

void follow_resize_2d(const Graph& g, const Node& n, const cpu::ResizeAxis& rows, const cpu::ResizeAxis& cols,
                      Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  if (!plain_4d(g, xi) || !plain_4d(g, yi)) return;
  const Shape x = shape_of(g, xi), y4 = shape_of(g, yi);
  if (x[0] != y4[0] || x[1] != y4[1]) return;
  offer(g, s, {xi}, yi, true, [=](int64_t b) -> BlockedRun {
    return [=](const BufferTable&, const std::vector<const float*>& xs, float* y) {
      cpu::resize_2d_blocked(x[0], x[1], b, x[2], x[3], y4[2], y4[3], rows, cols, xs[0], y);
    };
  });
}

namespace {

// NCHW -> NHWC (perm 0, 2, 3, 1): the output is the input in NHWC, so the input is read in any
// block and written as NHWC (a copy of pixel runs when it already is NHWC).
void transpose_to_channels_last(const Graph& g, const Node& n, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const Shape x = shape_of(g, xi);
  const std::vector<int64_t> perm = n.attr_ints("perm");
  offer(g, s, {xi}, yi, false, [=](int64_t b) -> BlockedRun {
    const std::vector<int64_t> from = cpu::blocked_strides(b, x[1], x[2], x[3]);
    const std::vector<int64_t> nhwc = cpu::blocked_strides(x[1], x[1], x[2], x[3]);
    return [=](const BufferTable&, const std::vector<const float*>& xs, float* y) {
      if (b == 1) return cpu::transpose(x, perm, xs[0], y);
      const int64_t nhw[3] = {x[0], x[2], x[3]};
      cpu::concat_channels(nhw, {x[1]}, {xs[0]}, {from}, nhwc, y);
    };
  });
}

// NHWC -> NCHW (perm 0, 3, 1, 2): the input is the output in NHWC, so the output takes the
// layout its readers ask for (NativeLayout::output_any), a copy of pixel runs for NHWC.
void transpose_from_channels_last(const Graph& g, const Node& n, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const Shape y4 = shape_of(g, yi);
  auto l = std::make_shared<NativeLayout>();
  l->output = yi;
  l->output_any = true;
  auto out = std::make_shared<std::vector<int64_t>>();  // empty: NCHW
  l->apply = [out](const NativeLayout& nl) { *out = nl.output_used ? nl.output_strides : std::vector<int64_t>(); };
  s.native = l;
  std::function<void(const BufferTable&)> plain = std::move(s.run);
  const std::vector<int64_t> nhwc = cpu::blocked_strides(y4[1], y4[1], y4[2], y4[3]);
  s.run = [=](const BufferTable& t) {
    if (out->empty()) return plain(t);
    const int64_t nhw[3] = {y4[0], y4[2], y4[3]};
    cpu::concat_channels(nhw, {y4[1]}, {t.f32(xi)}, {nhwc}, *out, t.f32(yi));
  };
}

}  // namespace

void follow_transpose(const Graph& g, const Node& n, Step& s) {
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  if (!plain_4d(g, xi) || !plain_4d(g, yi)) return;
  const std::vector<int64_t> perm = n.attr_ints("perm");
  if (perm == std::vector<int64_t>{0, 2, 3, 1}) transpose_to_channels_last(g, n, s);
  if (perm == std::vector<int64_t>{0, 3, 1, 2}) transpose_from_channels_last(g, n, s);
}

}  // namespace fusert::cpu_lowering
