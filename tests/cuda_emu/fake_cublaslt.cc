// Emulated cuBLASLt (the subset kernels/cuda/cublaslt_gemm.cc uses), for fusert_emu. It follows
// the cuBLASLt documentation in COLUMN-MAJOR terms, independently of fusert's row-major view:
//   D[b] = epilogue(alpha * op(A[b]) op(B[b]) + beta * C[b])       (C unread when beta = 0)
// with op(X) = X or X^T per CUBLASLT_MATMUL_DESC_TRANSA/B, m x n = D's rows x cols, batches
// at each layout's CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET (elements; 0 broadcasts), and the
// epilogue: BIAS adds bias[i] to row i of D (the vector has D-rows elements), then RELU
// (max(x, 0)) or GELU (tanh approximation, 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))).
// Attribute sizes are checked against the documented types. The heuristic returns one
// algorithm; it remembers the pointer alignment it was chosen for (from the preference's
// minimum alignments and the bias pointer's value) and its workspace, and cublasLtMatmul
// checks both. Work is enqueued on the given stream (captured into CUDA Graphs like any
// other stream work).
#include <cublasLt.h>

#include <Eigen/Dense>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/cuda_emu/emu.h"

struct cublasLtContext {
  int unused = 0;
};

namespace {

namespace emu = fusert::emu;

struct Desc {
  int32_t compute = CUBLAS_COMPUTE_32F;
  int32_t scale = CUDA_R_32F;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N, transc = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int64_t bias_batch_stride = 0;
  int32_t bias_type = CUDA_R_32F;
};

struct Layout {
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int32_t batch = 1;
  int64_t stride = 0;
};

struct Pref {
  uint32_t search = 0;
  uint64_t max_workspace = 0;
  uint32_t align[4] = {256, 256, 256, 256};  // A, B, C, D
};

constexpr uint64_t kAlgoMagic = 0x667573657274'4c74ull;  // "fusertLt"

struct Registry {
  std::set<const void*> live;
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

template <typename T>
bool live(const T* p) {
  return p && registry().live.count(p) != 0;
}

Desc* desc_of(cublasLtMatmulDesc_t d) {
  return live(reinterpret_cast<const Desc*>(d)) ? reinterpret_cast<Desc*>(d) : nullptr;
}
Layout* layout_of(cublasLtMatrixLayout_t l) {
  return live(reinterpret_cast<const Layout*>(l)) ? reinterpret_cast<Layout*>(l) : nullptr;
}
Pref* pref_of(cublasLtMatmulPreference_t p) {
  return live(reinterpret_cast<const Pref*>(p)) ? reinterpret_cast<Pref*>(p) : nullptr;
}

cublasStatus_t fail(cublasStatus_t st, const std::string& why) {
  std::fprintf(stderr, "fusert-emu cuBLASLt: %s\n", why.c_str());
  return st;
}

// Copies an attribute value of the documented type T.
template <typename T>
cublasStatus_t take(T* dst, const void* buf, size_t size, const char* name) {
  if (!buf || size != sizeof(T)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, std::string(name) + ": " + std::to_string(size) +
                                                 " bytes, the attribute is " + std::to_string(sizeof(T)));
  }
  std::memcpy(dst, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

bool has_bias(uint32_t ep) {
  return ep == CUBLASLT_EPILOGUE_BIAS || ep == CUBLASLT_EPILOGUE_RELU_BIAS || ep == CUBLASLT_EPILOGUE_GELU_BIAS;
}

// The problem a descriptor and four layouts describe: op(A) m x k, op(B) k x n, C and D m x n.
struct Problem {
  Desc op;
  Layout a, b, c, d;
  int64_t m = 0, n = 0, k = 0, batch = 1;
};

cublasStatus_t problem_of(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                          cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, Problem* p) {
  const Desc* op = desc_of(desc);
  const Layout *a = layout_of(A), *b = layout_of(B), *c = layout_of(C), *d = layout_of(D);
  if (!op || !a || !b || !c || !d) return fail(CUBLAS_STATUS_INVALID_VALUE, "unknown descriptor or layout");
  if (op->compute != CUBLAS_COMPUTE_32F && op->compute != CUBLAS_COMPUTE_32F_FAST_TF32) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "the emulation has fp32 compute types only");
  }
  if (op->scale != CUDA_R_32F || op->pointer_mode != CUBLASLT_POINTER_MODE_HOST) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "the emulation has fp32 host scalars only");
  }
  if (op->transc != CUBLAS_OP_N) return fail(CUBLAS_STATUS_NOT_SUPPORTED, "TRANSC must be CUBLAS_OP_N");
  const uint32_t ep = op->epilogue;
  if (ep != CUBLASLT_EPILOGUE_DEFAULT && ep != CUBLASLT_EPILOGUE_RELU && ep != CUBLASLT_EPILOGUE_BIAS &&
      ep != CUBLASLT_EPILOGUE_RELU_BIAS && ep != CUBLASLT_EPILOGUE_GELU && ep != CUBLASLT_EPILOGUE_GELU_BIAS) {
    return fail(CUBLAS_STATUS_NOT_SUPPORTED, "epilogue " + std::to_string(ep) + " is not emulated");
  }
  if (has_bias(ep) && op->bias_type != CUDA_R_32F) return fail(CUBLAS_STATUS_NOT_SUPPORTED, "bias type");
  for (const Layout* l : {a, b, c, d}) {
    if (l->type != CUDA_R_32F || l->order != CUBLASLT_ORDER_COL) {
      return fail(CUBLAS_STATUS_NOT_SUPPORTED, "the emulation has fp32 column-major layouts only");
    }
    if (l->rows == 0 || l->cols == 0 || l->rows > INT32_MAX || l->cols > INT32_MAX) {
      return fail(CUBLAS_STATUS_INVALID_VALUE, "layout dimensions out of range");
    }
    if (l->ld < static_cast<int64_t>(l->rows)) {
      return fail(CUBLAS_STATUS_INVALID_VALUE,
                  "leading dimension " + std::to_string(l->ld) + " < rows " + std::to_string(l->rows));
    }
    if (l->batch < 1 || l->stride < 0) return fail(CUBLAS_STATUS_INVALID_VALUE, "batch count / stride");
  }
  const int64_t am = op->transa == CUBLAS_OP_N ? a->rows : a->cols, ak = op->transa == CUBLAS_OP_N ? a->cols : a->rows;
  const int64_t bk = op->transb == CUBLAS_OP_N ? b->rows : b->cols, bn = op->transb == CUBLAS_OP_N ? b->cols : b->rows;
  const int64_t m = static_cast<int64_t>(d->rows), n = static_cast<int64_t>(d->cols);
  if (am != m || bn != n || ak != bk || c->rows != d->rows || c->cols != d->cols) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "op(A) " + std::to_string(am) + "x" + std::to_string(ak) + ", op(B) " +
                                                 std::to_string(bk) + "x" + std::to_string(bn) + ", C " +
                                                 std::to_string(c->rows) + "x" + std::to_string(c->cols) + ", D " +
                                                 std::to_string(m) + "x" + std::to_string(n) + " do not compose");
  }
  if (a->batch != d->batch || b->batch != d->batch || c->batch != d->batch) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "batch counts differ between A, B, C and D");
  }
  if (d->batch > 1) {
    // Output matrices of a batch must not overlap.
    if (d->stride < d->ld * static_cast<int64_t>(d->cols)) {
      return fail(CUBLAS_STATUS_INVALID_VALUE, "D's batch stride overlaps its matrices");
    }
  }
  p->op = *op;
  p->a = *a;
  p->b = *b;
  p->c = *c;
  p->d = *d;
  p->m = m;
  p->n = n;
  p->k = ak;
  p->batch = d->batch;
  return CUBLAS_STATUS_SUCCESS;
}

uint32_t pointer_alignment(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  uint32_t a = 256;
  while (a > 1 && (u % a) != 0) a /= 2;
  return a;
}

// Elements one layout spans over its batch.
int64_t layout_elems(const Layout& l) {
  return (l.batch - 1) * l.stride + (static_cast<int64_t>(l.cols) - 1) * l.ld + static_cast<int64_t>(l.rows);
}

float gelu_tanh(float x) {
  const float k = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.f + std::tanh(k * (x + 0.044715f * x * x * x)));
}

bool overlaps(const float* a, int64_t an, const float* b, int64_t bn) { return a < b + bn && b < a + an; }

}  // namespace

// ---------------------------------------------------------------- handle and status
cublasStatus_t CUBLASWINAPI cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
  *lightHandle = new cublasLtContext();
  registry().live.insert(*lightHandle);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (!lightHandle || !registry().live.erase(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

const char* CUBLASWINAPI cublasLtGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}

const char* CUBLASWINAPI cublasLtGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    default:
      return "unknown error (emulated cuBLASLt)";
  }
}

// ---------------------------------------------------------------- descriptors
cublasStatus_t CUBLASWINAPI cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                                     cudaDataType_t scaleType) {
  if (!matmulDesc) return CUBLAS_STATUS_INVALID_VALUE;
  auto* d = new Desc();
  d->compute = computeType;
  d->scale = scaleType;
  registry().live.insert(d);
  *matmulDesc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  Desc* d = desc_of(matmulDesc);
  if (!d) return matmulDesc ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
  registry().live.erase(d);
  delete d;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc,
                                                           cublasLtMatmulDescAttributes_t attr, const void* buf,
                                                           size_t sizeInBytes) {
  Desc* d = desc_of(matmulDesc);
  if (!d) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      return take(&d->compute, buf, sizeInBytes, "COMPUTE_TYPE");
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      return take(&d->scale, buf, sizeInBytes, "SCALE_TYPE");
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return take(&d->pointer_mode, buf, sizeInBytes, "POINTER_MODE");
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return take(&d->transa, buf, sizeInBytes, "TRANSA");
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return take(&d->transb, buf, sizeInBytes, "TRANSB");
    case CUBLASLT_MATMUL_DESC_TRANSC:
      return take(&d->transc, buf, sizeInBytes, "TRANSC");
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return take(&d->epilogue, buf, sizeInBytes, "EPILOGUE");
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return take(&d->bias, buf, sizeInBytes, "BIAS_POINTER");
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      return take(&d->bias_batch_stride, buf, sizeInBytes, "BIAS_BATCH_STRIDE");
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return take(&d->bias_type, buf, sizeInBytes, "BIAS_DATA_TYPE");
    default:
      return fail(CUBLAS_STATUS_INVALID_VALUE, "matmul attribute " + std::to_string(attr) + " is not emulated");
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type,
                                                       uint64_t rows, uint64_t cols, int64_t ld) {
  if (!matLayout) return CUBLAS_STATUS_INVALID_VALUE;
  auto* l = new Layout();
  l->type = type;
  l->rows = rows;
  l->cols = cols;
  l->ld = ld;
  registry().live.insert(l);
  *matLayout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  Layout* l = layout_of(matLayout);
  if (!l) return matLayout ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
  registry().live.erase(l);
  delete l;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout,
                                                             cublasLtMatrixLayoutAttribute_t attr, const void* buf,
                                                             size_t sizeInBytes) {
  Layout* l = layout_of(matLayout);
  if (!l) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      return take(&l->type, buf, sizeInBytes, "LAYOUT_TYPE");
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      return take(&l->order, buf, sizeInBytes, "LAYOUT_ORDER");
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      return take(&l->rows, buf, sizeInBytes, "LAYOUT_ROWS");
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      return take(&l->cols, buf, sizeInBytes, "LAYOUT_COLS");
    case CUBLASLT_MATRIX_LAYOUT_LD:
      return take(&l->ld, buf, sizeInBytes, "LAYOUT_LD");
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return take(&l->batch, buf, sizeInBytes, "LAYOUT_BATCH_COUNT");
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return take(&l->stride, buf, sizeInBytes, "LAYOUT_STRIDED_BATCH_OFFSET");
    default:
      return fail(CUBLAS_STATUS_INVALID_VALUE, "layout attribute " + std::to_string(attr) + " is not emulated");
  }
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
  auto* p = new Pref();
  registry().live.insert(p);
  *pref = reinterpret_cast<cublasLtMatmulPreference_t>(p);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  Pref* p = pref_of(pref);
  if (!p) return pref ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_SUCCESS;
  registry().live.erase(p);
  delete p;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CUBLASWINAPI cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                                 cublasLtMatmulPreferenceAttributes_t attr,
                                                                 const void* buf, size_t sizeInBytes) {
  Pref* p = pref_of(pref);
  if (!p) return CUBLAS_STATUS_INVALID_VALUE;
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      return take(&p->search, buf, sizeInBytes, "PREF_SEARCH_MODE");
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return take(&p->max_workspace, buf, sizeInBytes, "PREF_MAX_WORKSPACE_BYTES");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      return take(&p->align[0], buf, sizeInBytes, "PREF_MIN_ALIGNMENT_A");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      return take(&p->align[1], buf, sizeInBytes, "PREF_MIN_ALIGNMENT_B");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      return take(&p->align[2], buf, sizeInBytes, "PREF_MIN_ALIGNMENT_C");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return take(&p->align[3], buf, sizeInBytes, "PREF_MIN_ALIGNMENT_D");
    default:
      return fail(CUBLAS_STATUS_INVALID_VALUE, "preference attribute " + std::to_string(attr) + " is not emulated");
  }
}

// ---------------------------------------------------------------- heuristic
// One algorithm: vectorised 16-byte accesses when every buffer (and the bias pointer value) is
// promised 16-byte aligned and every leading dimension and batch stride keeps that alignment,
// else 4-byte accesses; split-K workspace (64 KiB, if allowed) when K >= 256.
namespace {
std::atomic<bool> g_refuse_epilogues{false};
}  // namespace

void fusert::emu::set_lt_epilogues_refused(bool refused) { g_refuse_epilogues = refused; }

cublasStatus_t CUBLASWINAPI cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc, cublasLtMatrixLayout_t Adesc,
    cublasLtMatrixLayout_t Bdesc, cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
    cublasLtMatmulPreference_t preference, int requestedAlgoCount,
    cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returnAlgoCount) {
  if (!live(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const Pref* pref = pref_of(preference);
  if (!pref || requestedAlgoCount < 1 || !heuristicResultsArray || !returnAlgoCount) return CUBLAS_STATUS_INVALID_VALUE;
  Problem p;
  const cublasStatus_t s = problem_of(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  uint32_t align = 16;
  for (uint32_t a : pref->align) align = std::min(align, a);
  if (has_bias(p.op.epilogue)) align = std::min(align, pointer_alignment(p.op.bias));
  for (const Layout* l : {&p.a, &p.b, &p.c, &p.d}) {
    if ((l->ld * 4) % align != 0 || (l->stride * 4) % align != 0) align = 4;
  }
  *returnAlgoCount = 0;
  if (align < 4) return CUBLAS_STATUS_SUCCESS;  // fp32 needs element alignment: no algorithm
  if (g_refuse_epilogues && p.op.epilogue != CUBLASLT_EPILOGUE_DEFAULT) return CUBLAS_STATUS_SUCCESS;
  cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[0];
  std::memset(&r, 0, sizeof r);
  const uint64_t ws = p.k >= 256 ? std::min<uint64_t>(pref->max_workspace, 64 * 1024) : 0;
  r.algo.data[0] = kAlgoMagic;
  r.algo.data[1] = align;
  r.algo.data[2] = ws;
  r.workspaceSize = ws;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.f;
  *returnAlgoCount = 1;
  return CUBLAS_STATUS_SUCCESS;
}

// ---------------------------------------------------------------- matmul
cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                                           cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                                           const cublasLtMatmulAlgo_t* algo, void* workspace,
                                           size_t workspaceSizeInBytes, cudaStream_t stream) {
  if (!live(lightHandle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!alpha || !beta || !A || !B || !D) return fail(CUBLAS_STATUS_INVALID_VALUE, "null alpha, beta, A, B or D");
  Problem p;
  cublasStatus_t s = problem_of(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &p);
  if (s != CUBLAS_STATUS_SUCCESS) return s;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);  // host scalars
  const bool read_c = be != 0.f;  // "when beta is zero, C does not have to be a valid input"
  if (read_c && !C) return fail(CUBLAS_STATUS_INVALID_VALUE, "null C with beta != 0");
  if (C == D && (p.c.ld != p.d.ld || p.c.order != p.d.order || p.c.stride != p.d.stride)) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "in-place C == D needs equal C and D layouts");
  }
  const bool bias = has_bias(p.op.epilogue);
  if (bias && !p.op.bias)
    return fail(CUBLAS_STATUS_INVALID_VALUE, "bias epilogue without CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  uint32_t need_align = 4;
  uint64_t need_ws = 0;
  if (algo) {
    if (algo->data[0] != kAlgoMagic) return fail(CUBLAS_STATUS_INVALID_VALUE, "algorithm not from the heuristic");
    need_align = static_cast<uint32_t>(algo->data[1]);
    need_ws = algo->data[2];
  }
  const auto* a = static_cast<const float*>(A);
  const auto* b = static_cast<const float*>(B);
  const auto* c = static_cast<const float*>(read_c ? C : nullptr);
  auto* d = static_cast<float*>(D);
  const auto* bp = static_cast<const float*>(bias ? p.op.bias : nullptr);
  for (const void* ptr : {static_cast<const void*>(a), static_cast<const void*>(b), C, static_cast<const void*>(d),
                          static_cast<const void*>(bp)}) {
    if (ptr && pointer_alignment(ptr) < need_align) {
      emu::record_violation("cublasLtMatmul: pointer " + std::to_string(reinterpret_cast<uintptr_t>(ptr)) +
                            " is not aligned to the " + std::to_string(need_align) +
                            " bytes the algorithm was chosen for");
      return CUBLAS_STATUS_NOT_SUPPORTED;
    }
  }
  if (workspaceSizeInBytes < need_ws) {
    return fail(CUBLAS_STATUS_INVALID_VALUE, "workspace of " + std::to_string(workspaceSizeInBytes) +
                                                 " bytes, the algorithm needs " + std::to_string(need_ws));
  }
  bool ok = emu::check_device_range(a, sizeof(float) * layout_elems(p.a), emu::Access::kRead, "cublasLtMatmul A");
  ok &= emu::check_device_range(b, sizeof(float) * layout_elems(p.b), emu::Access::kRead, "cublasLtMatmul B");
  if (read_c)
    ok &= emu::check_device_range(c, sizeof(float) * layout_elems(p.c), emu::Access::kRead, "cublasLtMatmul C");
  ok &= emu::check_device_range(d, sizeof(float) * layout_elems(p.d), emu::Access::kWrite, "cublasLtMatmul D");
  if (bias) {
    ok &= emu::check_device_range(bp, sizeof(float) * ((p.batch - 1) * p.op.bias_batch_stride + p.m),
                                  emu::Access::kRead, "cublasLtMatmul bias");
  }
  if (need_ws) ok &= emu::check_device_range(workspace, need_ws, emu::Access::kWrite, "cublasLtMatmul workspace");
  const int64_t dn = layout_elems(p.d);
  if (overlaps(a, layout_elems(p.a), d, dn) || overlaps(b, layout_elems(p.b), d, dn)) {
    emu::record_violation("cublasLtMatmul: D overlaps A or B (the result would be undefined)");
    ok = false;
  }
  if (!ok) return CUBLAS_STATUS_INVALID_VALUE;
  emu::emu_enqueue(stream, [p, al, be, a, b, c, d, bp, workspace, need_ws] {
    using Mat = Eigen::MatrixXf;
    using CMap = Eigen::Map<const Mat, 0, Eigen::OuterStride<>>;
    using DMap = Eigen::Map<Mat, 0, Eigen::OuterStride<>>;
    emu::scribble(workspace, need_ws);
    for (int64_t i = 0; i < p.batch; ++i) {
      CMap am(a + i * p.a.stride, static_cast<Eigen::Index>(p.a.rows), static_cast<Eigen::Index>(p.a.cols),
              Eigen::OuterStride<>(p.a.ld));
      CMap bm(b + i * p.b.stride, static_cast<Eigen::Index>(p.b.rows), static_cast<Eigen::Index>(p.b.cols),
              Eigen::OuterStride<>(p.b.ld));
      Mat acc(p.m, p.n);
      const bool ta = p.op.transa != CUBLAS_OP_N, tb = p.op.transb != CUBLAS_OP_N;
      if (!ta && !tb)
        acc.noalias() = am * bm;
      else if (ta && !tb)
        acc.noalias() = am.transpose() * bm;
      else if (!ta && tb)
        acc.noalias() = am * bm.transpose();
      else
        acc.noalias() = am.transpose() * bm.transpose();
      acc *= al;
      if (c) {
        CMap cm(c + i * p.c.stride, p.m, p.n, Eigen::OuterStride<>(p.c.ld));
        acc += be * cm;
      }
      DMap dm(d + i * p.d.stride, p.m, p.n, Eigen::OuterStride<>(p.d.ld));
      const float* bias_b = bp ? bp + i * p.op.bias_batch_stride : nullptr;
      const uint32_t ep = p.op.epilogue;
      for (int64_t col = 0; col < p.n; ++col) {
        for (int64_t row = 0; row < p.m; ++row) {
          float v = acc(row, col);
          if (bias_b) v += bias_b[row];  // per row of D
          if (ep == CUBLASLT_EPILOGUE_RELU || ep == CUBLASLT_EPILOGUE_RELU_BIAS) v = std::fmax(v, 0.f);
          if (ep == CUBLASLT_EPILOGUE_GELU || ep == CUBLASLT_EPILOGUE_GELU_BIAS) v = gelu_tanh(v);
          dm(row, col) = v;
        }
      }
    }
    emu::count_op(emu::OpKind::kLibrary);
  });
  return CUBLAS_STATUS_SUCCESS;
}
