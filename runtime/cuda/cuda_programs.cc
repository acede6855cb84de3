// Bound elementwise programs, their argument structs, the kernel table and the guarded launch.
#include "runtime/cuda/cuda_programs.h"

#include <algorithm>
#include <cstring>

namespace fusert::cuda {

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = stride;
    stride *= shape[d];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const Shape& t_shape, const Shape& out) {
  Shape t = t_shape;
  if (t.size() < out.size()) t.insert(t.begin(), out.size() - t.size(), 1);
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t d = out.size(); d-- > 0;) {
    s[d] = t[d] == 1 ? 0 : stride;
    stride *= t[d];
  }
  return s;
}

int BoundProgram::add_value(const Graph& g, ValueId v) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].kind == Binding::kValue && inputs[i].value == v && inputs[i].offset == 0) return static_cast<int>(i);
  }
  Binding b;
  b.value = v;
  return add_binding(b, broadcast_strides(g.value(v).shape, prog.out_shape));
}

int BoundProgram::add_binding(const Binding& b, const std::vector<int64_t>& strides) {
  inputs.push_back(b);
  prog.input_strides.push_back(strides);
  return static_cast<int>(inputs.size() - 1);
}

void BoundProgram::append_steps(const Graph& g, const std::vector<kern::EpilogueStep>& steps,
                                const std::vector<ValueId>& operands, int reg) {
  for (size_t i = 0; i < steps.size(); ++i) {
    const kern::EpilogueStep& e = steps[i];
    kern::ElementwiseInstr in;
    in.op = e.op;
    in.dst = in.src = reg;
    in.a = e.a;
    in.b = e.b;
    in.operand_first = e.operand_first;
    if (i < operands.size() && operands[i] != kNoValue) in.input = add_value(g, operands[i]);
    prog.code.push_back(in);
  }
}

const float* bind_in(const Binding& b, const RunEnv& env) {
  if (b.kind == Binding::kScratch) return env.scratch + b.offset;
  if (b.kind == Binding::kConstant) return b.constant->get() + b.offset;
  return env.dev.f32(b.value) + b.offset;
}

float* bind_out(const Binding& b, const RunEnv& env) {
  if (b.kind == Binding::kScratch) return env.scratch + b.offset;
  return env.dev.f32(b.value) + b.offset;
}

FzEwArgs ew_args(const BoundProgram& bp, const RunEnv& env) {
  FzEwArgs a;
  std::memset(&a, 0, sizeof a);
  const auto& shape = bp.prog.out_shape;
  const size_t pad = FZ_MAX_RANK - shape.size();
  a.numel = 1;
  for (int d = 0; d < FZ_MAX_RANK; ++d) a.shape[d] = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    a.shape[pad + d] = shape[d];
    a.numel *= shape[d];
  }
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    for (size_t d = 0; d < shape.size(); ++d) a.in_strides[i][pad + d] = bp.prog.input_strides[i][d];
    a.in[i] = bind_in(bp.inputs[i], env);
  }
  for (size_t o = 0; o < bp.outputs.size(); ++o) a.out[o] = bind_out(bp.outputs[o], env);
  return a;
}

Result<int> KernelTable::add(const KernelSource& src, const std::string& what) {
  for (size_t i = 0; i < plan_->kernels.size(); ++i) {
    GeneratedKernel& k = plan_->kernels[i];
    if (k.src.entry == src.entry && k.src.source == src.source) {
      if (std::find(k.groups.begin(), k.groups.end(), what) == k.groups.end()) k.groups.push_back(what);
      return static_cast<int>(i);
    }
  }
  if (!compile_) {
    plan_->kernels.push_back(GeneratedKernel{src, CompiledKernel{}, {what}});
    return static_cast<int>(plan_->kernels.size() - 1);
  }
  FUSERT_ASSIGN_OR_RETURN(CompiledKernel bin, compile_kernel(src.source, src.entry, what));
  plan_->compile_ms += bin.compile_ms;
  plan_->kernels.push_back(GeneratedKernel{src, std::move(bin), {what}});
  return static_cast<int>(plan_->kernels.size() - 1);
}

unsigned grid_1d(int64_t numel, int block) {
  int64_t blocks = (numel + block - 1) / block;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 132 * 16)));
}

namespace {

// Largest element offset + 1 an input reads.
int64_t extent(const FzEwArgs& a, size_t i) {
  int64_t last = 0;
  for (int d = 0; d < FZ_MAX_RANK; ++d) last += (a.shape[d] - 1) * a.in_strides[i][d];
  return last + 1;
}

bool contiguous(const FzEwArgs& a, size_t i) {
  int64_t stride = 1;
  for (int d = FZ_MAX_RANK; d-- > 0;) {
    if (a.shape[d] != 1 && a.in_strides[i][d] != stride) return false;
    stride *= a.shape[d];
  }
  return true;
}

}  // namespace

Status launch_program(const RunEnv& env, int k, const BoundProgram& bp, const std::string& what) {
  FzEwArgs a = ew_args(bp, env);
  size_t copied = 0;  // elements of alias_scratch in use
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    const float* in = a.in[i];
    const int64_t n = extent(a, i);
    bool hazard = false;
    for (size_t o = 0; o < bp.outputs.size(); ++o) {
      const float* out = a.out[o];
      bool overlap = in < out + a.numel && out < in + n;
      if (overlap && !(in == out && contiguous(a, i))) hazard = true;
    }
    if (!hazard) continue;
    if (copied + static_cast<size_t>(n) > env.alias_scratch_elems) {
      return error(StatusCode::kInternal) << what << ": operands aliasing the output exceed the alias scratch";
    }
    float* copy = env.alias_scratch + copied;
    CUDA_CHECK(
        cudaMemcpyAsync(copy, in, static_cast<size_t>(n) * sizeof(float), cudaMemcpyDeviceToDevice, env.ctx.stream()),
        what);
    a.in[i] = copy;
    copied += static_cast<size_t>(n);
  }
  const int block = env.plan.kernels[static_cast<size_t>(k)].src.block;
  return env.ctx.launch(env.kernels[static_cast<size_t>(k)], dim3(grid_1d(a.numel, block)), dim3(block), 0, &a, what);
}

}  // namespace fusert::cuda
