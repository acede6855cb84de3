// Lowering of graph nodes to CPU kernel launches: each lower_<Op> turns a node's attributes
// and shapes into a kernel parameter struct captured by the step (kernels never see the graph).
#include <cstring>

#include "graph/unary.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cpu/data_movement.h"
#include "kernels/cpu/fused_kernels.h"
#include "kernels/cpu/index_kernels.h"
#include "kernels/cpu/max_pool_indices.h"
#include "runtime/cpu/layout_follow.h"
#include "runtime/cpu/lower_cpu.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

namespace {

Step make_step(const Graph& g, int node_index, const char* kernel) {
  return lowering::node_step(g, node_index, kernel);
}

using cpu_lowering::shape_of;

}  // namespace

// Every op's lowering (some live in lower_single_seq.cc).
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) Status lower_##name(const Graph&, int, Step&);
#include "graph/ops.def"
#undef FUSERT_OP

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(Conv) {
  const Node& n = NODE;
  cpu::ConvParams p = lowering::conv_params(g, n);
  ValueId xi = n.inputs[0], wi = n.inputs[1], yi = n.outputs[0];
  ValueId bi = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  s.kernel = p.group == p.c && p.group == p.m && p.group > 1 ? "depthwise_conv2d" : "conv2d";
  s.run = [=](const BufferTable& b) {
    cpu::conv2d(p, b.f32(xi), b.f32(wi), bi == kNoValue ? nullptr : b.f32(bi), b.f32(yi));
  };
  return Status();
}

LOWER(BatchNormalization) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  int64_t nb = x[0], c = x[1];
  float eps = static_cast<float>(n.attr_f("epsilon"));
  std::vector<ValueId> in = n.inputs;
  ValueId yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::batch_norm(nb, c, spatial, b.f32(in[0]), b.f32(in[1]), b.f32(in[2]), b.f32(in[3]), b.f32(in[4]), eps,
                    b.f32(yi));
  };
  cpu_lowering::follow_batch_norm(g, n, s);
  return Status();
}

// Every op of graph/base/unary_ops.def with its own op-table row (Row 1): cpu::unary with the
// table's formula and the node's parameters.
static Status lower_unary(const Graph& g, int ni, Step& s, cpu::EpOp op) {
  const Node& n = NODE;
  int64_t count = shape_numel(shape_of(g, n.outputs[0]));
  float a = 0, b = 0;
  unary_params(n, &a, &b);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.run = [=](const BufferTable& t) { cpu::unary(op, a, b, count, t.f32(xi), t.f32(yi)); };
  cpu_lowering::follow_unary(g, n, op, a, b, s);
  return Status();
}
#define FUSERT_UNARY(Name, Row, Expr, Flops, Regs, Schema, Doc) FUSERT_UNARY_LOWER_##Row(Name)
#define FUSERT_UNARY_LOWER_0(Name)
#define FUSERT_UNARY_LOWER_1(Name) \
  LOWER(Name) { return lower_unary(g, ni, s, cpu::EpOp::k##Name); }
#define FUSERT_UNARY_LOWER_2(Name)
#include "graph/base/unary_ops.def"
#undef FUSERT_UNARY
#undef FUSERT_UNARY_LOWER_0
#undef FUSERT_UNARY_LOWER_1
#undef FUSERT_UNARY_LOWER_2

static Status lower_copy(const Graph& g, int ni, Step& s) {
  const Node& n = NODE;
  size_t bytes = static_cast<size_t>(shape_numel(shape_of(g, n.outputs[0]))) * dtype_size(g.value(n.outputs[0]).dtype);
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.kernel = "copy";
  s.run = [=](const BufferTable& b) { std::memcpy(b.raw(yi), b.raw(xi), bytes); };
  return Status();
}
LOWER(Identity) { return lower_copy(g, ni, s); }
LOWER(InstanceNormalization) {
  const Node& n = NODE;
  const Shape& x = shape_of(g, n.inputs[0]);
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  const int64_t nb = x[0], c = x[1];
  const float eps = static_cast<float>(n.attr_f("epsilon"));
  const ValueId xi = n.inputs[0], si = n.inputs[1], bi = n.inputs[2], yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    cpu::instance_norm(nb, c, spatial, b.f32(xi), b.f32(si), b.f32(bi), eps, b.f32(yi));
  };
  return Status();
}

LOWER(Flatten) { return lower_copy(g, ni, s); }
LOWER(Reshape) {
  s.inputs.resize(1);  // the shape input is a constant consumed at planning time
  return lower_copy(g, ni, s);
}

LOWER(Clip) {
  const Node& n = NODE;
  float lo = static_cast<float>(n.attr_f("min")), hi = static_cast<float>(n.attr_f("max"));
  if (n.inputs.size() > 1 && n.inputs[1] != kNoValue) lo = g.value(n.inputs[1]).data.f32()[0];
  if (n.inputs.size() > 2 && n.inputs[2] != kNoValue) hi = g.value(n.inputs[2]).data.f32()[0];
  int64_t count = shape_numel(shape_of(g, n.outputs[0]));
  ValueId xi = n.inputs[0], yi = n.outputs[0];
  s.inputs.resize(1);
  s.run = [=](const BufferTable& b) { cpu::unary(cpu::EpOp::kClip, lo, hi, count, b.f32(xi), b.f32(yi)); };
  cpu_lowering::follow_unary(g, n, cpu::EpOp::kClip, lo, hi, s);
  return Status();
}

static Status lower_binary(const Graph& g, int ni, Step& s, cpu::BinaryKind kind) {
  const Node& n = NODE;
  Shape out = shape_of(g, n.outputs[0]);
  auto padded = [&](ValueId id) {
    Shape sh = shape_of(g, id);
    sh.insert(sh.begin(), out.size() - sh.size(), 1);
    return sh;
  };
  Shape as = padded(n.inputs[0]), bs = padded(n.inputs[1]);
  ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  for (ValueId v : {ai, bi, yi}) {
    if (g.value(v).dtype != DType::kF32) {  // integer arithmetic folds at import or is refused
      return error(StatusCode::kUnsupported)
             << n.loc.str() << ": " << n.name << " (" << op_info(n.op).name << ") of " << dtype_name(g.value(v).dtype)
             << " '" << g.value(v).name << "' at run time: fusert computes integer arithmetic only on constants "
             << "(this one did not fold: a division by zero or an overflow, or an input computed at run time)";
    }
  }
  s.run = [=](const BufferTable& b) { cpu::binary(kind, out, as, b.f32(ai), bs, b.f32(bi), b.f32(yi)); };
  cpu_lowering::follow_binary(g, n, kind, s);
  return Status();
}
LOWER(Add) { return lower_binary(g, ni, s, cpu::BinaryKind::kAdd); }
LOWER(Sub) { return lower_binary(g, ni, s, cpu::BinaryKind::kSub); }
LOWER(Mul) { return lower_binary(g, ni, s, cpu::BinaryKind::kMul); }
LOWER(Div) { return lower_binary(g, ni, s, cpu::BinaryKind::kDiv); }
LOWER(Pow) { return lower_binary(g, ni, s, cpu::BinaryKind::kPow); }

cpu::PoolParams lowering::pool_params(const Graph& g, const Node& n) {
  const Shape& x = shape_of(g, n.inputs[0]);
  const Shape& y = shape_of(g, n.outputs[0]);
  cpu::PoolParams p;
  p.n = x[0];
  p.c = x[1];
  p.h = x[2];
  p.w = x[3];
  p.oh = y[2];
  p.ow = y[3];
  const auto& k = n.attr_ints("kernel_shape");
  const auto& st = n.attr_ints("strides");
  const auto& pd = n.attr_ints("pads");
  p.kh = k[0];
  p.kw = k[1];
  p.stride_h = st[0];
  p.stride_w = st[1];
  p.pad_top = pd[0];
  p.pad_left = pd[1];
  p.pad_bottom = pd[2];
  p.pad_right = pd[3];
  if (n.attrs.count("dilations")) {
    p.dil_h = n.attr_ints("dilations")[0];
    p.dil_w = n.attr_ints("dilations")[1];
  }
  return p;
}

LOWER(MaxPool) {
  const DType xt = g.value(NODE.inputs[0]).dtype;
  if (xt == DType::kI8 || xt == DType::kU8) return lowering::lower_max_pool_8bit(g, ni, s);
  cpu::PoolParams p = lowering::pool_params(g, NODE);
  ValueId xi = NODE.inputs[0], yi = NODE.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::max_pool2d(p, b.f32(xi), b.f32(yi)); };
  return Status();
}

// MaxPool with its Indices output: the reference loop (kernels/cpu/max_pool_indices.h).
LOWER(MaxPoolWithIndices) {
  cpu::PoolParams p = lowering::pool_params(g, NODE);
  const bool column_major = NODE.attr_i("storage_order") != 0;
  const ValueId xi = NODE.inputs[0], yi = NODE.outputs[0], ii = NODE.outputs.size() > 1 ? NODE.outputs[1] : kNoValue;
  s.reference_loop = true;
  s.detail = "reference loop: MaxPool with its indices";
  s.run = [=](const BufferTable& b) {
    std::vector<int64_t> scratch(ii == kNoValue ? static_cast<size_t>(p.n * p.c * p.oh * p.ow) : 0);
    cpu::max_pool2d_indices(p, column_major, b.f32(xi), b.f32(yi),
                            ii == kNoValue ? scratch.data() : static_cast<int64_t*>(b.raw(ii)));
  };
  return Status();
}

LOWER(AveragePool) {
  cpu::PoolParams p = lowering::pool_params(g, NODE);
  p.count_include_pad = NODE.attr_i("count_include_pad") != 0;
  ValueId xi = NODE.inputs[0], yi = NODE.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::avg_pool2d(p, b.f32(xi), b.f32(yi)); };
  return Status();
}

LOWER(GlobalAveragePool) {
  const Shape& x = shape_of(g, NODE.inputs[0]);
  int64_t spatial = 1;
  for (size_t i = 2; i < x.size(); ++i) spatial *= x[i];
  int64_t nb = x[0], c = x[1];
  ValueId xi = NODE.inputs[0], yi = NODE.outputs[0];
  s.run = [=](const BufferTable& b) { cpu::global_avg_pool(nb, c, spatial, b.f32(xi), b.f32(yi)); };
  cpu_lowering::follow_global_avg_pool(g, NODE, s);
  return Status();
}

LOWER(Transpose) {
  Shape x = shape_of(g, NODE.inputs[0]);
  std::vector<int64_t> perm = NODE.attr_ints("perm");
  ValueId xi = NODE.inputs[0], yi = NODE.outputs[0];
  const DType t = g.value(xi).dtype;
  if (dtype_size(t) == 1) {  // i8, u8, bool: a quantised activation (quantize_dynamic's Transformers)
    s.run = [=](const BufferTable& b) {
      cpu::transpose_bytes(x, perm, static_cast<const uint8_t*>(b.raw(xi)), static_cast<uint8_t*>(b.raw(yi)));
    };
    return Status();
  }
  if (t == DType::kI64) {  // an 8-byte element moves as a pair of 4-byte ones: one more dim, kept last
    perm.push_back(static_cast<int64_t>(x.size()));
    x.push_back(2);
  }
  s.run = [=](const BufferTable& b) {
    cpu::transpose(x, perm, static_cast<const float*>(b.raw(xi)), static_cast<float*>(b.raw(yi)));
  };
  if (t == DType::kF32) cpu_lowering::follow_transpose(g, NODE, s);
  return Status();
}

namespace {

// A channel Concat of 4-D f32 tensors offers the layout pass any layout for each input and its
// output (cpu::concat_channels): between oneDNN convolutions it then copies native layouts
// directly, and the reorders on both sides disappear.
void offer_native_concat(const Graph& g, const Node& n, Step& s) {
  const Shape& y = shape_of(g, n.outputs[0]);
  if (y.size() != 4 || n.attr_i("axis") != 1 || g.value(n.outputs[0]).dtype != DType::kF32) return;
  auto l = std::make_shared<NativeLayout>();
  for (ValueId in : n.inputs) {
    NativeLayout::Read r;
    r.value = in;
    r.any = true;
    l->reads.push_back(r);
  }
  l->output = n.outputs[0];
  l->output_any = true;
  struct Layouts {
    std::vector<std::vector<int64_t>> xs;  // per input; empty: NCHW
    std::vector<int64_t> y;
    bool native = false;
  };
  auto layouts = std::make_shared<Layouts>();
  l->apply = [layouts](const NativeLayout& nl) {
    layouts->xs.clear();
    for (const NativeLayout::Read& r : nl.reads) layouts->xs.push_back(r.used ? r.strides : std::vector<int64_t>());
    layouts->y = nl.output_used ? nl.output_strides : std::vector<int64_t>();
    layouts->native = true;
  };
  s.native = l;
  std::vector<int64_t> cs;
  for (ValueId in : n.inputs) cs.push_back(shape_of(g, in)[1]);
  const std::vector<ValueId> ins = n.inputs;
  const ValueId yi = n.outputs[0];
  const int64_t nhw[3] = {y[0], y[2], y[3]};
  std::function<void(const BufferTable&)> plain = std::move(s.run);
  s.run = [=](const BufferTable& b) {
    if (!layouts->native) return plain(b);  // the layout pass kept everything NCHW
    std::vector<const float*> xs;
    for (ValueId id : ins) xs.push_back(b.f32(id));
    cpu::concat_channels(nhw, cs, xs, layouts->xs, layouts->y, b.f32(yi));
  };
}

}  // namespace

LOWER(Concat) {
  const Node& n = NODE;
  int64_t axis = n.attr_i("axis");
  const Shape& y = shape_of(g, n.outputs[0]);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(axis) + 1; d < y.size(); ++d) inner *= y[d];
  const DType t = g.value(n.outputs[0]).dtype;
  if (t == DType::kI64) inner *= 2;  // an 8-byte element moves as two 4-byte ones (i32, f32: one)
  std::vector<int64_t> lens;
  for (ValueId in : n.inputs) lens.push_back(shape_of(g, in)[static_cast<size_t>(axis)]);
  std::vector<ValueId> ins = n.inputs;
  ValueId yi = n.outputs[0];
  s.run = [=](const BufferTable& b) {
    std::vector<const float*> xs;
    for (ValueId id : ins) xs.push_back(static_cast<const float*>(b.raw(id)));
    cpu::concat(outer, inner, lens, xs, static_cast<float*>(b.raw(yi)));
  };
  if (t == DType::kF32) offer_native_concat(g, n, s);
  return Status();
}

LOWER(Gemm) {
  const Node& n = NODE;
  cpu::GemmParams p = lowering::gemm_params(g, n);
  ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  ValueId ci = n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  s.kernel = "gemm";
  s.run = [=](const BufferTable& b) {
    cpu::gemm(p, b.f32(ai), b.f32(bi), ci == kNoValue ? nullptr : b.f32(ci), b.f32(yi));
  };
  return Status();
}

LOWER(MatMul) {
  const Node& n = NODE;
  cpu::MatMulParams p = lowering::matmul_params(g, n);
  ValueId ai = n.inputs[0], bi = n.inputs[1], yi = n.outputs[0];
  s.kernel = "matmul";
  s.run = [=](const BufferTable& b) { cpu::matmul(p, b.f32(ai), b.f32(bi), b.f32(yi)); };
  return Status();
}

// Softmax and LogSoftmax: the [outer, len, inner] view around the node's (normalised) axis.
static Status lower_softmax(const Graph& g, int ni, Step& s, bool log) {
  const cpu::AxisView v = cpu::axis_view_of(shape_of(g, NODE.inputs[0]), NODE.attr_i("axis"));
  ValueId xi = NODE.inputs[0], yi = NODE.outputs[0];
  s.run = [=](const BufferTable& b) {
    (log ? cpu::log_softmax : cpu::softmax)(v.outer, v.len, v.inner, b.f32(xi), b.f32(yi));
  };
  return Status();
}

LOWER(Softmax) { return lower_softmax(g, ni, s, false); }
LOWER(LogSoftmax) { return lower_softmax(g, ni, s, true); }

#undef LOWER
#undef NODE

Result<Step> lower_node_cpu(const Graph& g, int ni) {
  using LowerFn = Status (*)(const Graph&, int, Step&);
  static const LowerFn kLower[] = {
#define FUSERT_OP(name, pattern, min_in, max_in, max_out, schema, doc) &lower_##name,
#include "graph/ops.def"
#undef FUSERT_OP
  };
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  Step s = make_step(g, ni, op_name(n.op));
  Status st = kLower[static_cast<size_t>(n.op)](g, ni, s);
  if (!st.ok()) return error(st.code()) << "lowering node '" << n.name << "': " << st.message();
  return s;
}

Result<std::vector<Step>> lower_graph_cpu(const Graph& g) {
  std::vector<Step> steps;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    FUSERT_ASSIGN_OR_RETURN(Step s, lower_node_cpu(g, static_cast<int>(i)));
    steps.push_back(std::move(s));
  }
  return steps;
}

}  // namespace fusert
