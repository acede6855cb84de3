// Generated CUDA kernels without a GPU: golden lines of each generator's source, determinism of
// source and entry name, a zero-spill sm_90 compile of every generated kernel through NVRTC +
// nvJitLink (register counts printed), and the compile cache (disk files, memory hits, errors).
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "kernels/cuda/nvrtc_compiler.h"

namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using kern::EpOp;

namespace {

kern::ElementwiseInstr instr(EpOp op, int input = -1, float a = 0.f, float b = 0.f) {
  kern::ElementwiseInstr i;
  i.op = op, i.input = input, i.a = a, i.b = b;
  return i;
}

// A one-register program over `shape` whose inputs have the given strides.
kern::ElementwiseProgram program(std::vector<int64_t> shape, std::vector<std::vector<int64_t>> strides,
                                 std::vector<kern::ElementwiseInstr> code) {
  kern::ElementwiseProgram p;
  p.out_shape = std::move(shape);
  p.input_strides = std::move(strides);
  p.code = std::move(code);
  p.stores = {{0, 0}};
  return p;
}

const std::vector<int64_t> kShape = {2, 8, 5, 5};
const std::vector<int64_t> kContig = {200, 25, 5, 1};

kern::ElementwiseProgram relu_prog() { return program(kShape, {kContig}, {instr(EpOp::kRelu)}); }
kern::ElementwiseProgram bias_relu_prog() {
  return program(kShape, {kContig, {0, 1, 0, 0}}, {instr(EpOp::kAddTensor, 1), instr(EpOp::kRelu)});
}
kern::ElementwiseProgram clip_prog(float hi) { return program(kShape, {kContig}, {instr(EpOp::kClip, -1, 0.f, hi)}); }
kern::ElementwiseProgram gelu_prog() { return program(kShape, {kContig}, {instr(EpOp::kGelu)}); }

// LayerNorm over rows with a residual add before (in[1]) and affine scale/shift (in[2], in[3]).
cu::RowNormSpec layer_norm_spec() {
  cu::RowNormSpec s;
  s.kind = kern::RowNorm::kLayerNorm;
  s.scale_input = 2, s.shift_input = 3;
  s.pre.code = {instr(EpOp::kAddTensor, 1)};
  s.pre.stores = {{0, 0}};
  return s;
}

// softmax(x * scale + mask): the scale is a scalar operand (in[1], strides 0), the mask (in[2])
// is loaded into register 1 and added as a register operand.
cu::RowNormSpec softmax_spec() {
  cu::RowNormSpec s;
  s.kind = kern::RowNorm::kSoftmax;
  s.pre.num_registers = 2;
  s.pre.loads = {{1, 2}};
  kern::ElementwiseInstr add_mask = instr(EpOp::kAddTensor);
  add_mask.src2 = 1;
  s.pre.code = {instr(EpOp::kMulTensor, 1), add_mask};
  s.pre.stores = {{0, 0}};
  return s;
}

cu::PoolSpec gap_relu_spec() {
  cu::PoolSpec s;
  s.kind = cu::PoolSpec::kGlobalAverage;
  s.pre.code = {instr(EpOp::kRelu)};
  s.pre.stores = {{0, 0}};
  return s;
}

cu::PoolSpec avg_pool_spec() {
  cu::PoolSpec s;
  s.kind = cu::PoolSpec::kAverage;
  s.kh = s.kw = 3, s.stride_h = s.stride_w = 2, s.pad_top = s.pad_left = 1, s.pad_bottom = s.pad_right = 1;
  s.count_include_pad = true;
  s.post.code = {instr(EpOp::kHardSwish)};
  s.post.stores = {{0, 0}};
  return s;
}

cu::PoolSpec max_pool_spec() {
  cu::PoolSpec s;
  s.kind = cu::PoolSpec::kMax;
  s.kh = s.kw = 3, s.stride_h = s.stride_w = 2, s.pad_top = s.pad_left = 1;
  return s;
}

bool contains(const std::string& text, const std::string& piece) { return text.find(piece) != std::string::npos; }

void check_common(const cu::KernelSource& k, const std::string& kind) {
  CHECK(k.source.rfind(cu::kernel_abi_source(), 0) == 0);
  CHECK(k.entry.rfind("fz_" + kind + "_", 0) == 0);
  CHECK(k.entry.size() == 3 + kind.size() + 1 + 16);
  CHECK(
      contains(k.source, "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(k.block) + ") " + k.entry));
  CHECK_FALSE(contains(k.source, "#include"));
  CHECK_FALSE(contains(k.source, "__expf"));
  CHECK_FALSE(contains(k.source, "#error"));
}

// Every generator's output for the golden programs, plus a multi-member and an odd rank one.
std::vector<std::pair<std::string, cu::KernelSource>> all_kernels() {
  kern::ElementwiseProgram strided = program({3, 7}, {{1, 3}, {7, 1}}, {instr(EpOp::kPowTensor, 1)});
  strided.code[0].operand_first = true;
  strided.stores = {{0, 0}, {0, 1}};
  kern::ElementwiseProgram tanh_gelu = program({13}, {{1}, {0}}, {instr(EpOp::kSubTensor, 1), instr(EpOp::kGeluTanh)});
  cu::AttentionSpec attn;
  attn.head_dim = 64, attn.has_mask = true;
  cu::AttentionSpec attn_wide;
  attn_wide.head_dim = 256;
  return {{"relu", cu::gen_elementwise(relu_prog())},
          {"bias_relu", cu::gen_elementwise(bias_relu_prog())},
          {"clip6", cu::gen_elementwise(clip_prog(6.f))},
          {"gelu", cu::gen_elementwise(gelu_prog())},
          {"strided_pow", cu::gen_elementwise(strided)},
          {"softplus", cu::gen_elementwise(program({13}, {{1}}, {instr(EpOp::kSoftplus)}))},
          {"swish", cu::gen_elementwise(program({13}, {{1}}, {instr(EpOp::kSwish, -1, 1.0f)}))},
          {"fake_quant", cu::gen_elementwise(program({13}, {{1}}, {instr(EpOp::kFakeQuantize, -1, 0.05f, -128.f)}))},
          {"multi", cu::gen_elementwise_multi({relu_prog(), bias_relu_prog(), tanh_gelu})},
          {"layernorm", cu::gen_row_norm(layer_norm_spec())},
          {"softmax", cu::gen_row_norm(softmax_spec())},
          {"gap_relu", cu::gen_pool(gap_relu_spec())},
          {"avgpool", cu::gen_pool(avg_pool_spec())},
          {"maxpool", cu::gen_pool(max_pool_spec())},
          {"attention64", cu::gen_attention(attn)},
          {"attention256", cu::gen_attention(attn_wide)}};
}

}  // namespace

TEST_CASE("codegen.elementwise_golden_lines") {
  const cu::KernelSource relu = cu::gen_elementwise(relu_prog());
  check_common(relu, "ew");
  CHECK(contains(relu.source, "float r0 = a.in[0][i];"));
  CHECK(contains(relu.source, "r0 = fz_op_Relu(r0, 0x0p+0f, 0x0p+0f);"));
  CHECK(contains(relu.source, "a.out[0][i] = r0;"));
  CHECK(contains(relu.source, "return v < 0.0f ? 0.0f : v;"));  // NaN fails the test: stays NaN

  // Per-channel operand: strides {0, 1, 0, 0} over [2, 8, 5, 5] decompose the index.
  const cu::KernelSource bias = cu::gen_elementwise(bias_relu_prog());
  check_common(bias, "ew");
  CHECK(contains(bias.source, "const I c5 = q % (I)a.shape[5];"));
  CHECK(contains(bias.source, "fz_ew_body0<unsigned>(args, i);"));
  CHECK(contains(bias.source, "r0 = r0 + a.in[1][c2 * a.in_strides[1][2] + c3 * a.in_strides[1][3]"));
  CHECK(contains(bias.source, "r0 = fz_op_Relu(r0, 0x0p+0f, 0x0p+0f);"));

  const cu::KernelSource clip = cu::gen_elementwise(clip_prog(6.f));
  CHECK(contains(clip.source, "r0 = fz_op_Clip(r0, 0x0p+0f, 0x1.8p+2f);"));
  CHECK_FALSE(contains(clip.source, "const I c5"));  // contiguous: no index decomposition

  const cu::KernelSource gelu = cu::gen_elementwise(gelu_prog());
  CHECK(contains(gelu.source, "r0 = fz_op_Gelu(r0, 0x0p+0f, 0x0p+0f);"));
  CHECK(contains(gelu.source, "erff(v * 0.70710678118654752f)"));  // graph/base/unary_ops.def's text

  // A scalar operand reads [0].
  const cu::KernelSource scalar = cu::gen_elementwise(program({4, 4}, {{4, 1}, {0, 0}}, {instr(EpOp::kDivTensor, 1)}));
  CHECK(contains(scalar.source, "r0 = r0 / a.in[1][0];"));
}

TEST_CASE("codegen.deterministic_and_structural_entries") {
  for (const auto& [name, k] : all_kernels()) {
    CAPTURE(name);
    const auto again = all_kernels();
    bool found = false;
    for (const auto& [n2, k2] : again) {
      if (n2 != name) continue;
      found = true;
      CHECK(k2.source == k.source);
      CHECK(k2.entry == k.entry);
    }
    CHECK(found);
  }
  CHECK(cu::gen_elementwise(clip_prog(6.f)).entry != cu::gen_elementwise(clip_prog(5.f)).entry);
  // Sizes are not structure: a [4, 16, 9, 9] relu is the same kernel as the [2, 8, 5, 5] one.
  const kern::ElementwiseProgram bigger = program({4, 16, 9, 9}, {{1296, 81, 9, 1}}, {instr(EpOp::kRelu)});
  CHECK(cu::gen_elementwise(bigger).entry == cu::gen_elementwise(relu_prog()).entry);
  cu::RowNormSpec eps = layer_norm_spec();
  eps.eps = 1e-6f;
  CHECK(cu::gen_row_norm(eps).entry != cu::gen_row_norm(layer_norm_spec()).entry);
}

TEST_CASE("codegen.row_pool_attention_golden_lines") {
  const cu::KernelSource ln = cu::gen_row_norm(layer_norm_spec());
  check_common(ln, "layernorm");
  CHECK(contains(ln.source, "r0 = r0 + a.in[1][row * a.in_strides[1][0] + col * a.in_strides[1][1]];"));
  CHECK(contains(ln.source, "const float inv = (float)(1.0 / sqrt(var + (double)0x1.4f8b58p-17f));"));
  CHECK(contains(ln.source, "y = y * a.in[2][col];"));
  CHECK(contains(ln.source, "y = y + a.in[3][col];"));
  CHECK(contains(ln.source, "extern __shared__ float fz_row[];"));

  const cu::KernelSource sm = cu::gen_row_norm(softmax_spec());
  check_common(sm, "softmax");
  CHECK(contains(sm.source, "r1 = a.in[2][row * a.in_strides[2][0] + col * a.in_strides[2][1]];"));
  CHECK(contains(sm.source, "r0 = r0 * a.in[1][row * a.in_strides[1][0] + col * a.in_strides[1][1]];"));
  CHECK(contains(sm.source, "r0 = r0 + r1;"));
  CHECK(contains(sm.source, "if (m == FZ_NEG_INF) {"));
  CHECK(contains(sm.source, "expf(fz_row[col] - m)"));

  const cu::KernelSource attn = cu::gen_attention({64, true});
  check_common(attn, "attention");
  CHECK(contains(attn.source, "const int D = 64;"));
  CHECK(contains(attn.source, "p[j] = a.scale * dot + m[j];"));
  CHECK_FALSE(contains(cu::gen_attention({64, false}).source, "a.mask"));
  CHECK(cu::attention_shared_bytes(128, 64) == (128 + 64) * sizeof(float));

  const cu::KernelSource gap = cu::gen_pool(gap_relu_spec());
  check_common(gap, "gavgpool");
  CHECK(contains(gap.source, "r0 = fz_op_Relu(r0, 0x0p+0f, 0x0p+0f);"));
  CHECK(contains(gap.source, "s = fz_warp_sum(s);"));
  CHECK(contains(gap.source, "hw > 0 ? s / (float)hw : 0.0f"));

  const cu::KernelSource avg = cu::gen_pool(avg_pool_spec());
  CHECK(contains(avg.source, "px += ix >= -1 && ix < a.w + 1;"));
  CHECK(contains(avg.source, "r0 = fz_op_HardSwish(r0, 0x0p+0f, 0x0p+0f);"));
  CHECK(contains(cu::gen_pool(max_pool_spec()).source, "acc = fz_nan_max(acc, v);"));
}

TEST_CASE("codegen.every_kernel_compiles_without_spills") {
  for (const auto& [name, k] : all_kernels()) {
    CAPTURE(name);
    const auto r = cu::compile_kernel(k.source, k.entry, "test " + name);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(r->registers > 0);
    CHECK(r->spill_bytes() == 0);
    CHECK(r->stack_bytes == 0);
    CHECK_FALSE(r->cubin.empty());
    MESSAGE(name << ": " << r->registers << " registers, " << r->spill_bytes() << " spill bytes, " << r->compile_ms
                 << " ms" << std::string(r->from_cache ? " (disk cache)" : ""));
  }
}

TEST_CASE("codegen.compile_cache_and_errors") {
  char tmpl[] = "/tmp/fusert_cache_XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = std::string(tmpl) + "/nested/kernels";  // created on demand
  setenv("FUSERT_CACHE_DIR", dir.c_str(), 1);
  CHECK(cu::kernel_cache_dir() == dir);

  // A source no other test compiles, so the first call really compiles.
  const cu::KernelSource k = cu::gen_elementwise(clip_prog(3.25f));
  const cu::CompileCounters before = cu::compile_counters();
  const auto first = cu::compile_kernel(k.source, k.entry, "cache test");
  REQUIRE_MESSAGE(first.ok(), first.status().message());
  CHECK_FALSE(first->from_cache);
  CHECK(first->hash.size() == 16);
  CHECK(std::filesystem::exists(dir + "/" + first->hash + ".cubin"));
  CHECK(std::filesystem::exists(dir + "/" + first->hash + ".meta"));
  const auto second = cu::compile_kernel(k.source, k.entry, "cache test");
  REQUIRE(second.ok());
  CHECK(second->cubin == first->cubin);
  const cu::CompileCounters after = cu::compile_counters();
  CHECK(after.compiled == before.compiled + 1);
  CHECK(after.memory_hits == before.memory_hits + 1);

  const auto bad = cu::compile_kernel("extern \"C\" __global__ void fz_bad() { int x = ; }", "fz_bad", "group g7");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == fusert::StatusCode::kDeviceError);
  CHECK(contains(bad.status().message(), "group g7"));
  CHECK(contains(bad.status().message(), "error"));
  CHECK(contains(bad.status().message(), "expected an expression"));
  MESSAGE(bad.status().message());

  // An entry the source does not define is an error too, not a cubin that fails at load.
  const auto wrong = cu::compile_kernel(k.source, "fz_missing", "group g8");
  CHECK_FALSE(wrong.ok());

  unsetenv("FUSERT_CACHE_DIR");
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
}
