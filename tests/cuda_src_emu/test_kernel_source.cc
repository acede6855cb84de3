// Source emulation of the generated CUDA kernels, part 3: the test. The actual generated CUDA
// C++ of each kernel (generated_kernels.inc, written at build time by gen_kernels.cc) runs on
// the CPU under shim.h — every CUDA thread a fiber, real __syncthreads()/__shfl_xor_sync()
// semantics, dynamic shared memory of the launch's size — with the grid, block and shared
// memory the runtime launchers use (runtime/cuda/cuda_programs.cc grid_1d, lower_*.cc), and
// its outputs are compared with the kernel's host reference (tests/cuda_oracle/kernel_reference.h)
// run on a separate copy. This checks the kernel text itself (indexing, grid-stride loops,
// block reductions, barriers, shuffles, shared memory) without a GPU or NVRTC.
//
// Each launch runs twice, threads in ascending and in descending order (shim.h): the two must
// agree bit for bit (a missing barrier shows up as a difference) and agree with the reference
// within |got - ref| <= 1e-5 * max(1, |ref|) (NaN matching NaN, infinities exact).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/fused_kernels.h"
#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "shim.h"
#include "tests/cuda_oracle/kernel_reference.h"
// The host-patched kernels (from the build directory); after shim.h and kernel_abi.h.
#include "generated_kernels.inc"

namespace kern = fusert::kern;
namespace cu = fusert::cuda;
using Shape = std::vector<int64_t>;

// The kernel specs, defined in gen_kernels.cc (compiled into this test as well).
namespace fusert_src_emu {
std::vector<Shape> ew_shapes();
kern::ElementwiseProgram ew_mixed_program(const Shape& s);
kern::ElementwiseProgram ew_ops_program(const Shape& s);
std::vector<kern::ElementwiseProgram> ew_multi_programs(const Shape& s);
cu::RowNormSpec layer_norm_spec();
cu::RowNormSpec softmax_spec();
std::vector<int64_t> row_inners();
std::vector<cu::PoolSpec> pool_specs();
std::vector<cu::AttentionSpec> attention_specs();
std::vector<int64_t> attention_seqs();
std::vector<cu::KernelSource> all_kernels();
}  // namespace fusert_src_emu

namespace emu = fusert_src_emu;

namespace {

using Vec = std::vector<float>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr double kTol = 1e-5;
constexpr float kSentinel = 12345.f;

Vec random_vec(size_t n, unsigned seed, float lo = -3.f, float hi = 3.f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  Vec v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// Random values with NaN, +-inf, +-0 and ReLU6/HardSwish corner values in front.
Vec with_specials(size_t n, unsigned seed) {
  Vec v = random_vec(n, seed, -4.f, 4.f);
  const Vec sp = {kNaN, kInf, -kInf, 0.f, -0.f, -3.f, 3.f, 6.f, 0.5f};
  std::copy(sp.begin(), sp.begin() + static_cast<ptrdiff_t>(std::min(n, sp.size())), v.begin());
  return v;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// As runtime/cuda/cuda_programs.cc.
unsigned grid_1d(int64_t n, int block) {
  return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((n + block - 1) / block, 132 * 16)));
}

void check_close(const Vec& got, const Vec& want, const std::string& what, double tol = kTol) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = got[i], w = want[i];
    bool ok;
    if (std::isnan(w) || std::isnan(g))
      ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g))
      ok = g == w;
    else
      ok = std::fabs(static_cast<double>(g) - w) <= tol * std::max(1.0, std::fabs(static_cast<double>(w)));
    if (!ok && bad++ == 0) first = i;
  }
  CHECK_MESSAGE(bad == 0, what << ": " << bad << " of " << got.size() << " differ, first at " << first << ": kernel "
                               << got[first] << ", reference " << want[first]);
}

void check_same_bits(const Vec& a, const Vec& b, const std::string& what) {
  REQUIRE(a.size() == b.size());
  CHECK_MESSAGE(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0,
                what << ": ascending and descending thread order differ (a race?)");
}

void (*host_kernel(const std::string& entry))(const void*) {
  for (const auto& k : fz_generated::kHostKernels) {
    if (entry == k.entry) return k.run;
  }
  FAIL("no host-patched kernel for " << entry << " (generated_kernels.inc out of date?)");
  return nullptr;
}

struct Launch {
  fz_emu::Dim3 grid;
  unsigned block = 256;
  size_t shared = 0;
};

// Runs kernel `k` (its generated source, both thread orders) and its reference on separate
// output buffers of `sizes`, args from `make_args(outputs)`; compares every output.
template <class Args>
void run_and_compare(const cu::KernelSource& k, const std::function<Args(const std::vector<float*>&)>& make_args,
                     const std::vector<size_t>& sizes, const Launch& launch, const std::string& what,
                     double tol = kTol) {
  CAPTURE(what);
  const cu::KernelReference* ref = cu::find_kernel_reference(k.entry);
  REQUIRE_MESSAGE(ref != nullptr, "no reference for " << k.entry);
  REQUIRE(k.block == static_cast<int>(launch.block));
  auto run = [&](int mode) {  // 0 reference, 1 ascending, 2 descending
    std::vector<Vec> out;
    std::vector<float*> ptr;
    for (size_t n : sizes) out.emplace_back(n, kSentinel);
    for (Vec& o : out) ptr.push_back(o.data());
    const Args a = make_args(ptr);
    if (mode == 0) {
      (*ref)(&a, launch.grid.x, launch.grid.y, launch.grid.z);
    } else {
      fz_emu::launch(host_kernel(k.entry), &a, launch.grid, launch.block, launch.shared,
                     mode == 1 ? fz_emu::Order::kAscending : fz_emu::Order::kDescending);
    }
    return out;
  };
  const std::vector<Vec> want = run(0), asc = run(1), desc = run(2);
  for (size_t o = 0; o < sizes.size(); ++o) {
    const std::string name = what + " output " + std::to_string(o);
    check_close(asc[o], want[o], name, tol);
    check_same_bits(asc[o], desc[o], name);
  }
}

// As cuda_programs.cc ew_args: shape and strides right-aligned to FZ_MAX_RANK.
FzEwArgs ew_args(const kern::ElementwiseProgram& p, const std::vector<Vec>& in, const std::vector<float*>& out) {
  FzEwArgs a;
  std::memset(&a, 0, sizeof a);
  const size_t pad = FZ_MAX_RANK - p.out_shape.size();
  a.numel = numel(p.out_shape);
  for (int d = 0; d < FZ_MAX_RANK; ++d) a.shape[d] = 1;
  for (size_t d = 0; d < p.out_shape.size(); ++d) a.shape[pad + d] = p.out_shape[d];
  for (size_t i = 0; i < in.size(); ++i) {
    for (size_t d = 0; d < p.out_shape.size(); ++d) a.in_strides[i][pad + d] = p.input_strides[i][d];
    a.in[i] = in[i].data();
  }
  for (size_t o = 0; o < out.size(); ++o) a.out[o] = out[o];
  return a;
}

// Inputs covering each input's strided extent; input 0 with special values.
std::vector<Vec> ew_inputs(const kern::ElementwiseProgram& p, unsigned seed) {
  std::vector<Vec> in;
  for (size_t i = 0; i < p.input_strides.size(); ++i) {
    int64_t span = 1;
    for (size_t d = 0; d < p.out_shape.size(); ++d) span += (p.out_shape[d] - 1) * p.input_strides[i][d];
    in.push_back(i == 0 ? with_specials(static_cast<size_t>(span), seed)
                        : random_vec(static_cast<size_t>(span), seed + 1 + i));
  }
  return in;
}

size_t num_outputs(const kern::ElementwiseProgram& p) {
  size_t n = 0;
  for (const auto& [r, o] : p.stores) n = std::max(n, static_cast<size_t>(o) + 1);
  return n;
}

}  // namespace

TEST_CASE("codegen.source_emulation.table") {
  // Every kernel the specs produce was patched into generated_kernels.inc (same entry = same
  // source text, the entry hashes the body), and every one has a reference.
  for (const cu::KernelSource& k : emu::all_kernels()) {
    CAPTURE(k.entry);
    const bool patched = host_kernel(k.entry) != nullptr;
    CHECK(patched);
    CHECK(cu::find_kernel_reference(k.entry) != nullptr);
  }
}

TEST_CASE("codegen.source_emulation.elementwise") {
  unsigned seed = 100;
  for (const Shape& s : emu::ew_shapes()) {
    for (int which = 0; which < 2; ++which) {
      const kern::ElementwiseProgram p = which == 0 ? emu::ew_mixed_program(s) : emu::ew_ops_program(s);
      const cu::KernelSource k = cu::gen_elementwise(p);
      const std::vector<Vec> in = ew_inputs(p, seed++);
      const std::vector<size_t> sizes(num_outputs(p), static_cast<size_t>(numel(s)));
      const std::function<FzEwArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
        return ew_args(p, in, out);
      };
      const unsigned g = grid_1d(numel(s), k.block);
      for (unsigned grid : {g, 1u}) {  // the launcher's grid, and one block striding over all
        run_and_compare(k, make, sizes, {{grid, 1, 1}, 256, 0},
                        std::string(which == 0 ? "mixed" : "every op") + " [" + std::to_string(s[0]) + "," +
                            std::to_string(s[1]) + "," + std::to_string(s[2]) + "," + std::to_string(s[3]) + "] grid " +
                            std::to_string(grid));
        if (g == 1) break;
      }
    }
  }
}

TEST_CASE("codegen.source_emulation.elementwise_multi") {
  unsigned seed = 200;
  for (const Shape& s : emu::ew_shapes()) {
    const std::vector<kern::ElementwiseProgram> progs = emu::ew_multi_programs(s);
    const cu::KernelSource k = cu::gen_elementwise_multi(progs);
    std::vector<std::vector<Vec>> in;
    std::vector<size_t> sizes;
    unsigned most = 1;
    for (const auto& p : progs) {
      in.push_back(ew_inputs(p, seed++));
      sizes.push_back(static_cast<size_t>(numel(p.out_shape)));
      most = std::max(most, grid_1d(numel(p.out_shape), k.block));
    }
    const std::function<FzMultiEwArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
      FzMultiEwArgs a;
      std::memset(&a, 0, sizeof a);
      for (size_t m = 0; m < progs.size(); ++m) a.m[m] = ew_args(progs[m], in[m], {out[m]});
      return a;
    };
    for (unsigned grid : {most, 1u}) {
      run_and_compare(k, make, sizes, {{grid, 3, 1}, 256, 0},
                      "multi numel " + std::to_string(numel(s)) + " grid " + std::to_string(grid));
      if (most == 1) break;
    }
  }
}

TEST_CASE("codegen.source_emulation.layer_norm") {
  const cu::RowNormSpec spec = emu::layer_norm_spec();
  const cu::KernelSource k = cu::gen_row_norm(spec);
  const int64_t outer = 3;
  // Row 1 gets a common offset: the statistics must be accumulated in double (as the CPU kernel
  // and the reference do; a float butterfly sum was off by ~1e-4 at offset 1000), so both
  // offsets are held to kTol.
  for (const float offset : {10.f, 1000.f})
    for (int64_t inner : emu::row_inners()) {
      const size_t n = static_cast<size_t>(outer * inner), ni = static_cast<size_t>(inner);
      Vec x = random_vec(n, 300, -2.f, 2.f);
      for (size_t c = 0; c < ni; ++c) x[ni + c] += offset;
      const Vec res = random_vec(n, 301), scale = random_vec(ni, 302, 0.5f, 1.5f), shift = random_vec(ni, 303),
                s = {-1.5f};
      const std::function<FzRowArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
        FzRowArgs a;
        std::memset(&a, 0, sizeof a);
        a.outer = outer, a.inner = inner;
        const float* in[] = {x.data(), res.data(), scale.data(), shift.data(), s.data()};
        const int64_t st[][2] = {{inner, 1}, {inner, 1}, {0, 1}, {0, 1}, {0, 0}};
        for (int i = 0; i < 5; ++i) a.in[i] = in[i], a.in_strides[i][0] = st[i][0], a.in_strides[i][1] = st[i][1];
        a.out = out[0];
        return a;
      };
      run_and_compare(k, make, {n}, {{static_cast<unsigned>(outer), 1, 1}, 256, cu::row_norm_shared_bytes(inner)},
                      "layernorm inner " + std::to_string(inner) + " offset " + std::to_string(offset), kTol);
    }
}

TEST_CASE("codegen.source_emulation.softmax") {
  const cu::KernelSource k = cu::gen_row_norm(emu::softmax_spec());
  const int64_t outer = 5;  // rows: random, all -inf, half -inf, +80, one NaN
  for (int64_t inner : emu::row_inners()) {
    const size_t n = static_cast<size_t>(outer * inner), ni = static_cast<size_t>(inner);
    Vec x = random_vec(n, 400, -4.f, 4.f);
    for (size_t c = 0; c < ni; ++c) {
      x[ni + c] = -kInf;
      if (c % 2 == 0) x[2 * ni + c] = -kInf;
      x[3 * ni + c] += 80.f;
    }
    x[4 * ni + ni / 2] = kNaN;
    Vec mask = random_vec(ni, 401, -2.f, 0.f);
    if (ni > 3) mask[1] = -kInf;
    const Vec scale = {0.5f};
    const std::function<FzRowArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
      FzRowArgs a;
      std::memset(&a, 0, sizeof a);
      a.outer = outer, a.inner = inner;
      const float* in[] = {x.data(), scale.data(), mask.data()};
      const int64_t st[][2] = {{inner, 1}, {0, 0}, {0, 1}};
      for (int i = 0; i < 3; ++i) a.in[i] = in[i], a.in_strides[i][0] = st[i][0], a.in_strides[i][1] = st[i][1];
      a.out = out[0];
      return a;
    };
    run_and_compare(k, make, {n}, {{static_cast<unsigned>(outer), 1, 1}, 256, cu::row_norm_shared_bytes(inner)},
                    "softmax inner " + std::to_string(inner));
  }
}

TEST_CASE("codegen.source_emulation.pool") {
  struct Case {
    int spec;  // index into pool_specs(): 0 max, 1 average (count_include_pad), 2 global average
    int64_t n, c, h, w;
  };
  const std::vector<Case> cases = {{0, 2, 3, 13, 11}, {0, 1, 37, 5, 5}, {1, 2, 3, 13, 11}, {1, 1, 37, 5, 5},
                                   {2, 2, 13, 3, 7},  {2, 1, 3, 1, 37}, {2, 1, 1, 1, 1}};
  const std::vector<cu::PoolSpec> specs = emu::pool_specs();
  unsigned seed = 500;
  for (const Case& pc : cases) {
    const cu::PoolSpec& sp = specs[static_cast<size_t>(pc.spec)];
    const cu::KernelSource k = cu::gen_pool(sp);
    const bool global = sp.kind == cu::PoolSpec::kGlobalAverage;
    const int64_t oh =
        global ? 1 : (pc.h + sp.pad_top + sp.pad_bottom - ((sp.kh - 1) * sp.dil_h + 1)) / sp.stride_h + 1;
    const int64_t ow =
        global ? 1 : (pc.w + sp.pad_left + sp.pad_right - ((sp.kw - 1) * sp.dil_w + 1)) / sp.stride_w + 1;
    const size_t xn = static_cast<size_t>(pc.n * pc.c * pc.h * pc.w), yn = static_cast<size_t>(pc.n * pc.c * oh * ow);
    Vec x = random_vec(xn, seed++);
    if (xn > 5) x[5] = kNaN;  // NaN wins a max, poisons an average
    const Vec ch = random_vec(static_cast<size_t>(pc.c), seed++, -1.5f, 1.5f), full = random_vec(xn, seed++);
    const std::function<FzPoolArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
      FzPoolArgs a;
      std::memset(&a, 0, sizeof a);
      a.n = pc.n, a.c = pc.c, a.h = pc.h, a.w = pc.w, a.oh = oh, a.ow = ow;
      const float* in[] = {x.data(), ch.data(), full.data()};
      const int64_t st[][4] = {
          {pc.c * pc.h * pc.w, pc.h * pc.w, pc.w, 1}, {0, 1, 0, 0}, {pc.c * pc.h * pc.w, pc.h * pc.w, pc.w, 1}};
      for (int i = 0; i < 3; ++i) {
        a.in[i] = in[i];
        for (int d = 0; d < 4; ++d) a.in_strides[i][d] = st[i][d];
      }
      a.out = out[0];
      return a;
    };
    // As runtime/cuda/lower_single.cc: one warp per plane for the global average, else grid_1d.
    const unsigned g = global ? static_cast<unsigned>((pc.n * pc.c + k.block / 32 - 1) / (k.block / 32))
                              : grid_1d(static_cast<int64_t>(yn), k.block);
    for (unsigned grid : {g, 1u}) {
      run_and_compare(k, make, {yn}, {{grid, 1, 1}, 256, 0},
                      std::string(global         ? "global"
                                  : pc.spec == 0 ? "max"
                                                 : "avg") +
                          " " + std::to_string(pc.n) + "x" + std::to_string(pc.c) + "x" + std::to_string(pc.h) + "x" +
                          std::to_string(pc.w) + " grid " + std::to_string(grid));
      if (g == 1) break;
    }
  }
}

TEST_CASE("codegen.source_emulation.attention") {
  unsigned seed = 600;
  for (const cu::AttentionSpec& spec : emu::attention_specs()) {
    const cu::KernelSource k = cu::gen_attention(spec);
    const int64_t d = spec.head_dim, b = d <= 8 ? 2 : 1, h = d <= 64 ? 2 : 1, hd = h * d;
    for (int64_t s : emu::attention_seqs()) {
      const Vec qkv = random_vec(static_cast<size_t>(b * s * 3 * hd), seed++, -1.f, 1.f);  // packed [B*S, 3*H*D]
      Vec mask;
      if (spec.has_mask) {
        mask = random_vec(static_cast<size_t>(b * s * s), seed++, -1.f, 0.f);
        for (int64_t i = 0; i < s; ++i) mask[static_cast<size_t>(i * s + (i + 1) % s)] = -kInf;
        const int64_t row = std::min<int64_t>(2, s - 1);  // last batch: one fully masked query
        for (int64_t j = 0; j < s; ++j) mask[static_cast<size_t>(((b - 1) * s + row) * s + j)] = -kInf;
      }
      const std::function<FzAttnArgs(const std::vector<float*>&)> make = [&](const std::vector<float*>& out) {
        FzAttnArgs a;
        std::memset(&a, 0, sizeof a);
        a.batch = b, a.heads = h, a.seq = s;
        a.q_stride = a.k_stride = a.v_stride = 3 * hd;
        a.q_col = 0, a.k_col = hd, a.v_col = 2 * hd;
        a.mask_b_stride = spec.has_mask ? s * s : 0, a.mask_i_stride = spec.has_mask ? s : 0;
        a.scale = 1.f / std::sqrt(static_cast<float>(d));
        a.q = a.k = a.v = qkv.data();
        a.mask = spec.has_mask ? mask.data() : nullptr;
        a.y = out[0];
        return a;
      };
      const fz_emu::Dim3 grid = {static_cast<unsigned>(s), static_cast<unsigned>(h), static_cast<unsigned>(b)};
      run_and_compare(
          k, make, {static_cast<size_t>(b * s * hd)}, {grid, 128, cu::attention_shared_bytes(s, d)},
          "attention D " + std::to_string(d) + (spec.has_mask ? " mask" : "") + " seq " + std::to_string(s));
    }
  }
}
