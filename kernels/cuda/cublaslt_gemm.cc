// GEMM anchor on cuBLASLt. Row-major D[M,N] is cuBLASLt's column-major D^T[N,M] (same bytes,
// ld N), so we compute D^T = op(B)^T op(A)^T: cuBLASLt's "A" operand is our B and its "B" our A,
// and its per-row bias is our per-column bias. Descriptors and algorithms are fixed at create;
// run() sets the bias pointer and enqueues.
#include "kernels/cuda/cublaslt_gemm.h"

#include <atomic>
#include <cstdint>
#include <cstdio>

#include "kernels/cuda/bias_act.cuh"

namespace fusert::cuda {

namespace {

cublasLtEpilogue_t epilogue_of(const GemmDesc& d) {
  switch (d.act) {
    case GemmDesc::kRelu:
      return d.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case GemmDesc::kGeluTanh:
      return d.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    case GemmDesc::kNone:
      break;
  }
  return d.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
}

// A column-major fp32 layout rows x cols (leading dimension rows), batched by `stride` elements.
Status make_layout(cublasLtMatrixLayout_t* out, int64_t rows, int64_t cols, int64_t batch, int64_t stride,
                   const std::string& what) {
  CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(out, CUDA_R_32F, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), rows),
      what);
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
                 what);
    CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
        what);
  }
  return Status::ok_status();
}

// The pointer-alignment value a heuristic query assumes for the bias (cuBLASLt reads the bias
// pointer attribute's value, without dereferencing it, to infer its alignment).
const void* fake_pointer_aligned_to(uintptr_t bytes) { return reinterpret_cast<const void*>(bytes); }

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

std::atomic<int64_t> g_fallbacks{0};

const char* epilogue_name(const GemmDesc& d) {
  switch (epilogue_of(d)) {
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "RELU_BIAS";
    case CUBLASLT_EPILOGUE_RELU:
      return "RELU";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "GELU_BIAS";
    case CUBLASLT_EPILOGUE_GELU:
      return "GELU";
    case CUBLASLT_EPILOGUE_BIAS:
      return "BIAS";
    default:
      return "DEFAULT";
  }
}

}  // namespace

int64_t lt_epilogue_fallbacks() { return g_fallbacks.load(); }

Result<std::unique_ptr<LtGemm>> LtGemm::create(Context& ctx, const GemmDesc& d, const std::string& what) {
  Result<std::unique_ptr<LtGemm>> exact = create_exact(ctx, d, what);
  if (exact.ok() || (!d.bias && d.act == GemmDesc::kNone)) return exact;
  GemmDesc plain = d;
  plain.bias = false;
  plain.act = GemmDesc::kNone;
  Result<std::unique_ptr<LtGemm>> g = create_exact(ctx, plain, what);
  if (!g.ok()) return exact;  // the plain GEMM fails too: the first error says more
  (*g)->epilogue_apart_ = true;
  (*g)->full_ = d;
  ++g_fallbacks;
  std::fprintf(stderr,
               "fusert: note: %s: cuBLASLt has no algorithm for the %s epilogue at M=%lld N=%lld K=%lld batch=%lld; "
               "the GEMM runs without it and one kernel adds the bias and applies the activation\n",
               what.c_str(), epilogue_name(d), static_cast<long long>(d.m), static_cast<long long>(d.n),
               static_cast<long long>(d.k), static_cast<long long>(d.batch));
  return g;
}

Result<std::unique_ptr<LtGemm>> LtGemm::create_exact(Context& ctx, const GemmDesc& d, const std::string& what) {
  if (d.m <= 0 || d.n <= 0 || d.k <= 0 || d.batch < 1 || d.batch > INT32_MAX) {
    return error(StatusCode::kUnsupported)
           << what << ": cuBLASLt GEMM needs M, N, K >= 1 and a batch in [1, 2^31), got M=" << d.m << " N=" << d.n
           << " K=" << d.k << " batch=" << d.batch;
  }
  if (d.batch > 1 && d.stride_d < d.m * d.n) {
    return error(StatusCode::kInvalidArgument)
           << what << ": output batch stride " << d.stride_d << " would overlap [" << d.m << "," << d.n << "] matrices";
  }
  std::unique_ptr<LtGemm> g(new LtGemm());
  g->d_ = d;
  g->what_ = what;

  const cublasComputeType_t compute = ctx.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&g->op_, compute, CUDA_R_32F), what);
  // cuBLASLt's A is our B, its B our A (see the file comment).
  const int32_t op_lt_a = d.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int32_t op_lt_b = d.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op_, CUBLASLT_MATMUL_DESC_TRANSA, &op_lt_a, sizeof(op_lt_a)), what);
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op_, CUBLASLT_MATMUL_DESC_TRANSB, &op_lt_b, sizeof(op_lt_b)), what);
  const uint32_t epilogue = epilogue_of(d);
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(g->op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
               what);

  // Row-major X[r, c] is column-major [c rows, r cols] with ld c.
  FUSERT_RETURN_IF_ERROR(d.trans_a ? make_layout(&g->a_, d.m, d.k, d.batch, d.stride_a, what)
                                   : make_layout(&g->a_, d.k, d.m, d.batch, d.stride_a, what));
  FUSERT_RETURN_IF_ERROR(d.trans_b ? make_layout(&g->b_, d.k, d.n, d.batch, d.stride_b, what)
                                   : make_layout(&g->b_, d.n, d.k, d.batch, d.stride_b, what));
  FUSERT_RETURN_IF_ERROR(make_layout(&g->c_, d.n, d.m, d.batch, d.stride_c, what));
  FUSERT_RETURN_IF_ERROR(make_layout(&g->d_layout_, d.n, d.m, d.batch, d.stride_d, what));
  // With beta == 0, C is not read: run() passes D and D's layout for it.
  const cublasLtMatrixLayout_t c_layout = d.beta != 0.f ? g->c_ : g->d_layout_;

  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref), what);
  // One query per assumed pointer alignment: 16 bytes (every cudaMalloc / arena buffer) and 4.
  Status st;
  size_t need = 0;
  for (int pass = 0; pass < 2 && st.ok(); ++pass) {
    const uint32_t align = pass == 0 ? 16u : 4u;
    const uint64_t max_ws = ctx.workspace_bytes();
    const void* bias_probe = d.bias ? fake_pointer_aligned_to(align) : nullptr;
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    st = cublas_status(
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws, sizeof(max_ws)),
        "cublasLtMatmulPreferenceSetAttribute", what);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
      if (st.ok())
        st = cublas_status(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)),
                           "cublasLtMatmulPreferenceSetAttribute", what);
    }
    if (st.ok())
      st = cublas_status(
          cublasLtMatmulDescSetAttribute(g->op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_probe, sizeof(bias_probe)),
          "cublasLtMatmulDescSetAttribute", what);
    if (st.ok())
      st = cublas_status(cublasLtMatmulAlgoGetHeuristic(ctx.lt(), g->op_, g->b_, g->a_, c_layout, g->d_layout_, pref, 1,
                                                        &result, &count),
                         "cublasLtMatmulAlgoGetHeuristic", what);
    if (st.ok() && (count == 0 || result.state != CUBLAS_STATUS_SUCCESS)) {
      if (pass == 1) {  // unaligned pointers will then be reported by cublasLtMatmul itself
        g->algo_unaligned_ = g->algo_;
        break;
      }
      st = error(StatusCode::kUnsupported)
           << what << ": cuBLASLt has no algorithm for M=" << d.m << " N=" << d.n << " K=" << d.k
           << " batch=" << d.batch << " within " << ctx.workspace_bytes() << " workspace bytes (pointer alignment "
           << align << ")";
    }
    if (!st.ok()) break;
    (pass == 0 ? g->algo_ : g->algo_unaligned_) = result.algo;
    if (result.workspaceSize > need) need = result.workspaceSize;
  }
  cublasLtMatmulPreferenceDestroy(pref);
  FUSERT_RETURN_IF_ERROR(st);
  g->workspace_bytes_ = need;
  return g;
}

LtGemm::~LtGemm() {
  if (d_layout_) cublasLtMatrixLayoutDestroy(d_layout_);
  if (c_) cublasLtMatrixLayoutDestroy(c_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (op_) cublasLtMatmulDescDestroy(op_);
}

Status LtGemm::run(Context& ctx, const float* a, const float* b, const float* bias, const float* c, float* d) const {
  if (ctx.workspace_bytes() < workspace_bytes_) {
    return error(StatusCode::kInternal) << what_ << ": the GEMM needs " << workspace_bytes_
                                        << " workspace bytes but the context has " << ctx.workspace_bytes();
  }
  const bool read_c = d_.beta != 0.f;
  const bool wants_bias = epilogue_apart_ ? full_.bias : d_.bias;
  if ((wants_bias && !bias) || (read_c && !c)) {
    return error(StatusCode::kInternal) << what_ << ": the GEMM expects a " << (wants_bias && !bias ? "bias" : "C")
                                        << " pointer, got null";
  }
  // The descriptor is shared by all runs of this GEMM; runs are enqueued from one thread.
  const void* bias_ptr = d_.bias ? static_cast<const void*>(bias) : nullptr;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)),
               what_);
  const float* c_ptr = read_c ? c : d;
  const cublasLtMatrixLayout_t c_layout = read_c ? c_ : d_layout_;
  const bool all16 = aligned16(a) && aligned16(b) && aligned16(c_ptr) && aligned16(d) && aligned16(bias_ptr);
  const cublasLtMatmulAlgo_t* algo = all16 ? &algo_ : &algo_unaligned_;
  CUBLAS_CHECK(cublasLtMatmul(ctx.lt(), op_, &d_.alpha, b, b_, a, a_, &d_.beta, c_ptr, c_layout, d, d_layout_, algo,
                              ctx.workspace(), ctx.workspace_bytes(), ctx.stream()),
               what_);
  if (!epilogue_apart_) return Status::ok_status();
  // The epilogue cuBLASLt would have applied: act(D + bias), per matrix of a strided batch.
  const BiasAct act = full_.act == GemmDesc::kRelu       ? BiasAct::kRelu
                      : full_.act == GemmDesc::kGeluTanh ? BiasAct::kGeluTanh
                                                         : BiasAct::kNone;
  const bool packed = d_.batch == 1 || d_.stride_d == d_.m * d_.n;
  for (int64_t i = 0; i < (packed ? 1 : d_.batch); ++i) {
    const cudaError_t e = bias_act(packed ? d_.batch * d_.m : d_.m, d_.n, full_.bias ? bias : nullptr, act,
                                   d + i * d_.stride_d, ctx.stream());
    if (e != cudaSuccess) return error(StatusCode::kDeviceError) << what_ << ": bias_act: " << cudaGetErrorString(e);
  }
  return Status::ok_status();
}

}  // namespace fusert::cuda
