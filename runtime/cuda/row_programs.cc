// Helpers shared by the CUDA lowering files: device constants, kernel compilation per group,
// multi-tensor launches, and row programs (2-D strided operands of generated kernels).
#include <algorithm>
#include <cstring>

#include "runtime/cuda/cuda_lower_internal.h"

namespace fusert::cuda {

DeviceConstant::~DeviceConstant() {
  if (dev_) cudaFree(dev_);
}

Status DeviceConstant::upload(const std::string& what) {
  if (dev_ || host_.empty()) return Status();
  CUDA_CHECK(cudaMalloc(&dev_, host_.size()), what);
  CUDA_CHECK(cudaMemcpy(dev_, host_.data(), host_.size(), cudaMemcpyHostToDevice), what);
  return Status();
}

Result<int> GroupLowering::kernel(const KernelSource& src) {
  FUSERT_ASSIGN_OR_RETURN(int k, table.add(src, grp.name));
  ds.kernels.push_back(k);
  return k;
}

Status MultiLaunch::build(GroupLowering& gl) {
  for (size_t i = 0; i < progs.size(); i += FZ_MAX_MEMBERS) {
    std::vector<kern::ElementwiseProgram> part;
    for (size_t j = i; j < progs.size() && j < i + FZ_MAX_MEMBERS; ++j) part.push_back(progs[j]->prog);
    KernelSource src = gen_elementwise_multi(part);
    FUSERT_ASSIGN_OR_RETURN(int k, gl.kernel(src));
    kernels.push_back(k);
    blocks.push_back(src.block);
  }
  return Status();
}

Status MultiLaunch::run(const RunEnv& env, const std::string& what) const {
  for (size_t l = 0; l < kernels.size(); ++l) {
    FzMultiEwArgs args;
    std::memset(&args, 0, sizeof args);
    int64_t most = 0;
    size_t members = 0;
    for (size_t j = l * FZ_MAX_MEMBERS; j < progs.size() && j < (l + 1) * FZ_MAX_MEMBERS; ++j, ++members) {
      args.m[members] = ew_args(*progs[j], env);
      most = std::max<int64_t>(most, args.m[members].numel);
    }
    dim3 grid(grid_1d(most, blocks[l]), static_cast<unsigned>(members));
    FUSERT_RETURN_IF_ERROR(
        env.ctx.launch(env.kernels[static_cast<size_t>(kernels[l])], grid, dim3(blocks[l]), 0, &args, what));
  }
  return Status();
}

bool row_strides(const Shape& v_shape, const Shape& shape, std::vector<int64_t>* strides) {
  if (v_shape.size() > shape.size() || shape.empty()) return false;
  Shape v = v_shape;
  v.insert(v.begin(), shape.size() - v.size(), 1);
  const int64_t inner = shape.back();
  const bool lead_ones = std::all_of(v.begin(), v.end() - 1, [](int64_t d) { return d == 1; });
  const bool lead_equal = std::equal(v.begin(), v.end() - 1, shape.begin());
  if (v == shape)
    *strides = {inner, 1};
  else if (shape_numel(v) == 1)
    *strides = {0, 0};
  else if (lead_ones && v.back() == inner)
    *strides = {0, 1};
  else if (lead_equal && v.back() == 1)
    *strides = {1, 0};
  else
    return false;
  return true;
}

FzRowArgs row_args(const BoundProgram& bp, int64_t outer, int64_t inner, const RunEnv& env, float* out) {
  FzRowArgs a;
  std::memset(&a, 0, sizeof a);
  a.outer = outer;
  a.inner = inner;
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    a.in_strides[i][0] = bp.prog.input_strides[i][0];
    a.in_strides[i][1] = bp.prog.input_strides[i][1];
    a.in[i] = bind_in(bp.inputs[i], env);
  }
  a.out = out;
  return a;
}

// Adds a row-program input with [row, col] strides; false if it is not row-indexable.
bool add_row_input(const Graph& g, BoundProgram& bp, ValueId v, const Shape& shape, int* index) {
  for (size_t i = 0; i < bp.inputs.size(); ++i) {
    if (bp.inputs[i].kind == Binding::kValue && bp.inputs[i].value == v) {
      *index = static_cast<int>(i);
      return true;
    }
  }
  std::vector<int64_t> st;
  if (!row_strides(g.value(v).shape, shape, &st)) return false;
  Binding b;
  b.value = v;
  *index = bp.add_binding(b, st);
  return true;
}

// Appends epilogue steps to a row program (operands row-indexed); false if one is not.
bool append_row_steps(const Graph& g, BoundProgram& bp, const std::vector<kern::EpilogueStep>& steps,
                      const std::vector<ValueId>& operands, const Shape& shape, kern::ElementwiseProgram* prog) {
  for (size_t i = 0; i < steps.size(); ++i) {
    kern::ElementwiseInstr in;
    in.op = steps[i].op;
    in.a = steps[i].a;
    in.b = steps[i].b;
    in.operand_first = steps[i].operand_first;
    if (operands[i] != kNoValue && !add_row_input(g, bp, operands[i], shape, &in.input)) return false;
    prog->code.push_back(in);
  }
  return true;
}

}  // namespace fusert::cuda
