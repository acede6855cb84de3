// CUDA lowering of ConvTranspose: cuDNN's backward-data convolution, then the bias
// (kernels/cuda/cudnn_conv_transpose.h), instead of host fallback. Refused, so kept on the host,
// where cuDNN cannot express it: asymmetric pads, an output size the forward convolution does not
// map back, an empty tensor, other than 2-D f32.
#include <memory>

#include "kernels/cuda/cudnn_conv_transpose.h"
#include "runtime/cuda/cuda_lower_internal.h"
#include "runtime/lowering/spec.h"

namespace fusert::cuda {

namespace {

struct ConvTransposeState {
  std::unique_ptr<CudnnConvTranspose> ct;
};

}  // namespace

Status lower_conv_transpose_cuda(GroupLowering& gl, const Node& n) {
  const Graph& g = gl.g;
  const Shape& xs = g.value(n.inputs[0]).shape;
  const Shape& ys = g.value(n.outputs[0]).shape;
  if (xs.size() != 4 || g.value(n.inputs[0]).dtype != DType::kF32)
    return error(StatusCode::kUnsupported) << "ConvTranspose other than 2-D f32";
  if (shape_numel(xs) == 0 || shape_numel(ys) == 0) return error(StatusCode::kUnsupported) << "an empty tensor";
  const kern::ConvTransposeParams p = lowering::conv_transpose_params(g, n);
  const auto& pads = n.attr_ints("pads");  // canonicalised by shape inference: 4 values
  if (pads.size() != 4) return error(StatusCode::kUnsupported) << "pads not canonicalised";
  std::string why;
  if (!conv_transpose_fits(p, pads[2], pads[3], &why)) return error(StatusCode::kUnsupported) << "cuDNN: " << why;
  const bool bias = n.inputs.size() > 2 && n.inputs[2] != kNoValue;
  const ValueId x = n.inputs[0], w = n.inputs[1], b = bias ? n.inputs[2] : kNoValue, y = n.outputs[0];
  const std::string what = gl.grp.name;
  auto state = std::make_shared<ConvTransposeState>();
  gl.ds.library_calls = bias ? 2 : 1;
  gl.ds.prepare = [=](Context& ctx) -> Status {
    FUSERT_ASSIGN_OR_RETURN(state->ct, CudnnConvTranspose::create(ctx, p, bias, what));
    return ctx.reserve_workspace(state->ct->workspace_bytes());
  };
  gl.ds.run = [=](const RunEnv& env) -> Status {
    return state->ct->run(env.ctx, env.dev.f32(x), env.dev.f32(w), bias ? env.dev.f32(b) : nullptr, env.dev.f32(y));
  };
  return Status();
}

}  // namespace fusert::cuda
