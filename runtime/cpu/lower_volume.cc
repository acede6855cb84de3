// The volumetric ops (Conv3D, ConvTranspose3D, MaxPool3D, AveragePool3D; kernels/cpu/volume.h):
// a oneDNN primitive created here, at load, with the constant weights reordered once; the
// reference loop (marked REF in profiles, with oneDNN's reason in the step's detail) where oneDNN
// is absent or refuses, or where the weights are computed at run time.
#include <memory>

#include "kernels/cpu/volume.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

using cpu_lowering::shape_of;

namespace {

// The window parameters of 3-D node `n` (shapes inferred: pads resolved, attributes sized).
cpu::VolumeParams volume_params(const Graph& g, const Node& n) {
  const Shape x = shape_of(g, n.inputs[0]), y = shape_of(g, n.outputs[0]);
  cpu::VolumeParams p;
  p.n = x[0], p.c = x[1], p.m = y[1];
  const bool conv = n.op == OpKind::kConv3D || n.op == OpKind::kConvTranspose3D;
  const std::vector<int64_t> k =
      conv ? std::vector<int64_t>(shape_of(g, n.inputs[1]).begin() + 2, shape_of(g, n.inputs[1]).end())
           : n.attr_ints("kernel_shape");
  const std::vector<int64_t> st = n.attr_ints("strides"), pads = n.attr_ints("pads");
  const std::vector<int64_t> dil = n.attrs.count("dilations") ? n.attr_ints("dilations") : std::vector<int64_t>();
  for (size_t a = 0; a < 3; ++a) {
    p.in[a] = x[2 + a], p.out[a] = y[2 + a], p.k[a] = k[a];
    p.stride[a] = st.size() == 3 ? st[a] : 1;
    p.dil[a] = dil.size() == 3 ? dil[a] : 1;
    p.pad_begin[a] = pads.size() == 6 ? pads[a] : 0;
    p.pad_end[a] = pads.size() == 6 ? pads[a + 3] : 0;
  }
  if (conv) p.group = n.attr_i("group");
  if (n.op == OpKind::kAveragePool3D) p.count_include_pad = n.attr_i("count_include_pad") != 0;
  return p;
}

cpu::VolumeKind volume_kind(OpKind op) {
  switch (op) {
    case OpKind::kConv3D:
      return cpu::VolumeKind::kConv;
    case OpKind::kConvTranspose3D:
      return cpu::VolumeKind::kConvTranspose;
    case OpKind::kMaxPool3D:
      return cpu::VolumeKind::kMaxPool;
    default:
      return cpu::VolumeKind::kAveragePool;
  }
}

Status lower_volume(const Graph& g, int ni, Step& s) {
  const Node& n = g.nodes[static_cast<size_t>(ni)];
  const cpu::VolumeParams p = volume_params(g, n);
  const cpu::VolumeKind kind = volume_kind(n.op);
  const bool conv = kind == cpu::VolumeKind::kConv || kind == cpu::VolumeKind::kConvTranspose;
  const ValueId xi = n.inputs[0], yi = n.outputs[0];
  const ValueId wi = conv ? n.inputs[1] : kNoValue;
  const ValueId bi = conv && n.inputs.size() > 2 ? n.inputs[2] : kNoValue;
  const bool constant_weights = !conv || (!g.value(wi).data.empty() && (bi == kNoValue || !g.value(bi).data.empty()));
  std::string why = "the weights are computed at run time";
  std::shared_ptr<cpu::VolumeAnchor> prim;
  if (constant_weights) {
    prim = cpu::VolumeAnchor::create(kind, p, conv ? g.value(wi).data.f32() : nullptr,
                                     bi == kNoValue ? nullptr : g.value(bi).data.f32(), &why);
  }
  if (prim) {
    s.kernel = std::string("onednn_") + op_name(n.op);
    s.detail = prim->describe();
    s.run = [prim, xi, yi](const BufferTable& b) { prim->run(b.f32(xi), b.f32(yi)); };
    return Status();
  }
  s.kernel = std::string(op_name(n.op)) + "_reference";
  s.detail = "reference loop: " + why;
  s.reference_loop = true;
  s.run = [p, kind, xi, wi, bi, yi](const BufferTable& b) {
    const float* bias = bi == kNoValue ? nullptr : b.f32(bi);
    switch (kind) {
      case cpu::VolumeKind::kConv:
        cpu::conv3d_reference(p, b.f32(xi), b.f32(wi), bias, b.f32(yi));
        break;
      case cpu::VolumeKind::kConvTranspose:
        cpu::conv_transpose3d_reference(p, b.f32(xi), b.f32(wi), bias, b.f32(yi));
        break;
      case cpu::VolumeKind::kMaxPool:
        cpu::max_pool3d_reference(p, b.f32(xi), b.f32(yi));
        break;
      case cpu::VolumeKind::kAveragePool:
        cpu::avg_pool3d_reference(p, b.f32(xi), b.f32(yi));
        break;
    }
  };
  return Status();
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)

LOWER(Conv3D) { return lower_volume(g, ni, s); }
LOWER(ConvTranspose3D) { return lower_volume(g, ni, s); }
LOWER(MaxPool3D) { return lower_volume(g, ni, s); }
LOWER(AveragePool3D) { return lower_volume(g, ni, s); }

}  // namespace fusert
