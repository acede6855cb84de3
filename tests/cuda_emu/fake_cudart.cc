// Emulated CUDA runtime (the subset fusert uses), for fusert_emu: one "fusert CUDA emulator"
// device of compute capability 9.0 whose memory is host memory. Streams queue their work until
// the host synchronises; capture records it into CUDA Graphs that cudaGraphLaunch replays.
// Generated kernels load from their real cubins (checked in fake_kernels.cc: ELF, entry, the
// parameter size, launch bounds and static shared memory read from the cubin's .nv.info and
// .nv.shared sections) and run as their host references (tests/cuda_oracle/kernel_reference.h);
// their argument structs (kernel_abi.h) are checked against the allocations they point into.
// Signatures follow /usr/local/cuda/include/cuda_runtime_api.h (extern "C" from the header).
#include <cuda_runtime_api.h>
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudart_internal.h"
#include "tests/cuda_oracle/kernel_reference.h"

namespace fusert::emu {
namespace {

using detail::check_args;
using detail::CubinKernel;
using detail::elf_ok;
using detail::elf_size;
using detail::error_name;
using detail::error_string;
using detail::parse_kernel;
using detail::sizeof_args;

// ---------------------------------------------------------------- device description
constexpr int kSmVersion = 90;
constexpr size_t kSharedOptin = 232448;  // sm_90: 227 KiB per block by opt-in
constexpr size_t kSharedDefault = 48 * 1024;
constexpr size_t kTotalMemory = size_t{141} << 30;
constexpr size_t kGuard = 256;         // guard bytes before and after every allocation
constexpr unsigned char kFill = 0xFF;  // fresh memory and guards: NaN as f32
constexpr size_t kQuarantineBytes = size_t{512} << 20;

// ---------------------------------------------------------------- global state
struct Alloc {
  char* base = nullptr;  ///< what aligned_alloc returned
  size_t size = 0;       ///< bytes the caller asked for
  size_t total = 0;      ///< with guards
  bool pinned = false;
};

struct State {
  std::mutex mu;                      // allocations, violations, counters
  std::map<uintptr_t, Alloc> allocs;  // by user pointer
  std::deque<Alloc> quarantine;
  size_t quarantined = 0;
  std::vector<std::string> violations;
  std::set<std::string> reported;
  Counters counters;
  // Handles (host thread only).
  CUstream_st legacy;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::set<CUlib_st*> libraries;
  std::set<const CUkern_st*> kernels;
  std::map<CUlib_st*, std::vector<CUkern_st*>> lib_kernels;
  cudaError_t async_error = cudaSuccess;
};

State& st() {
  static State* s = new State();  // never destroyed: static destructors may still free memory
  return *s;
}

thread_local cudaError_t t_last_error = cudaSuccess;

cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess) t_last_error = e;
  return e;
}

CUstream_st* resolve(cudaStream_t s) {
  if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return &st().legacy;
  return s;
}

bool valid_stream(cudaStream_t s) {
  CUstream_st* r = resolve(s);
  return r == &st().legacy || st().streams.count(r) != 0;
}

// Streams this thread is capturing in global / thread-local mode: "unsafe" calls then fail.
int capturing_strict() {
  int n = st().legacy.capturing ? 1 : 0;
  for (CUstream_st* s : st().streams) n += s->capturing && s->mode != cudaStreamCaptureModeRelaxed ? 1 : 0;
  return n;
}

// A call that is not permitted while a capture is in progress: invalidates the captures.
bool refuse_during_capture(const char* call) {
  if (capturing_strict() == 0) return false;
  auto invalidate = [](CUstream_st* s) {
    if (s->capturing) s->capture_invalidated = true;
  };
  invalidate(&st().legacy);
  for (CUstream_st* s : st().streams) invalidate(s);
  std::fprintf(stderr, "fusert-emu: %s during stream capture: cudaErrorStreamCaptureUnsupported\n", call);
  return true;
}

void check_guards_locked(const char* when);

// Runs the queued work of one stream, in order.
void drain(CUstream_st* s) {
  if (s->queue.empty()) return;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    ++st().counters.syncs;
  }
  while (!s->queue.empty()) {
    std::function<void()> op = std::move(s->queue.front());
    s->queue.pop_front();
    op();
  }
}

void drain_all() {
  drain(&st().legacy);
  for (CUstream_st* s : st().streams) drain(s);
}

cudaError_t take_async_error() {
  cudaError_t e = st().async_error;
  st().async_error = cudaSuccess;
  return e;
}

void check_guards(const char* when) {
  std::lock_guard<std::mutex> lock(st().mu);
  check_guards_locked(when);
}

void violation_locked(const std::string& msg) {
  st().violations.push_back(msg);
  if (st().reported.insert(msg).second && st().reported.size() <= 50) {
    std::fprintf(stderr, "fusert-emu VIOLATION: %s\n", msg.c_str());
  }
}

bool guards_intact(const Alloc& a) {
  const char* user = a.base + kGuard;
  for (size_t i = 0; i < kGuard; ++i) {
    if (static_cast<unsigned char>(a.base[i]) != kFill) return false;
  }
  for (const char* p = user + a.size; p < a.base + a.total; ++p) {
    if (static_cast<unsigned char>(*p) != kFill) return false;
  }
  return true;
}

void check_guards_locked(const char* when) {
  for (auto& [ptr, a] : st().allocs) {
    if (a.pinned || guards_intact(a)) continue;
    std::ostringstream os;
    os << "guard bytes around the " << a.size << "-byte allocation at " << reinterpret_cast<void*>(ptr)
       << " were overwritten (out-of-bounds write), found " << when;
    violation_locked(os.str());
    std::memset(a.base, kFill, kGuard);
    std::memset(a.base + kGuard + a.size, kFill, a.total - kGuard - a.size);
  }
}

const Alloc* find_alloc_locked(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  auto it = st().allocs.upper_bound(u);
  if (it == st().allocs.begin()) return nullptr;
  --it;
  const Alloc& a = it->second;
  // One past the end still belongs to it (a zero-length range there).
  if (u >= it->first && u <= it->first + a.size) return &a;
  return nullptr;
}

std::string describe(const void* p) {
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  std::ostringstream os;
  os << p;
  auto it = st().allocs.upper_bound(u);
  if (it != st().allocs.begin()) {
    --it;
    os << " (" << (u - it->first) << " bytes past the start of the " << it->second.size << "-byte "
       << (it->second.pinned ? "pinned host" : "device") << " allocation at " << reinterpret_cast<void*>(it->first)
       << ")";
  }
  return os.str();
}

char* allocate(size_t size, bool pinned) {
  const size_t body = (size + kGuard - 1) / kGuard * kGuard;
  const size_t total = pinned ? body : kGuard + body + kGuard;
  char* base = static_cast<char*>(std::aligned_alloc(kGuard, total == 0 ? kGuard : total));
  if (!base) return nullptr;
  std::memset(base, kFill, total);
  char* user = pinned ? base : base + kGuard;
  std::lock_guard<std::mutex> lock(st().mu);
  st().allocs[reinterpret_cast<uintptr_t>(user)] = Alloc{base, size, total, pinned};
  return user;
}

// Releases an allocation; freed memory stays quarantined a while so a later allocation does
// not reuse its addresses and hide a use after free.
cudaError_t release(void* p, bool pinned, const char* call) {
  if (!p) return cudaSuccess;
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().allocs.find(reinterpret_cast<uintptr_t>(p));
  if (it == st().allocs.end() || it->second.pinned != pinned) {
    violation_locked(std::string(call) + "(" + describe(p) + "): not a pointer " +
                     (pinned ? "cudaMallocHost" : "cudaMalloc") + " returned, or already freed");
    return cudaErrorInvalidValue;
  }
  Alloc a = it->second;
  if (!pinned && !guards_intact(a)) {
    std::ostringstream os;
    os << "guard bytes around the " << a.size << "-byte allocation at " << p
       << " were overwritten (out-of-bounds write), found at " << call;
    violation_locked(os.str());
  }
  st().allocs.erase(it);
  st().quarantine.push_back(a);
  st().quarantined += a.total;
  while (st().quarantined > kQuarantineBytes && !st().quarantine.empty()) {
    st().quarantined -= st().quarantine.front().total;
    std::free(st().quarantine.front().base);
    st().quarantine.pop_front();
  }
  return cudaSuccess;
}

}  // namespace

// ---------------------------------------------------------------- emu.h
bool emu_capturing(cudaStream_t stream) { return valid_stream(stream) && resolve(stream)->capturing; }

void emu_enqueue(cudaStream_t stream, std::function<void()> op) {
  if (!valid_stream(stream)) {
    std::ostringstream os;
    os << "work enqueued on stream " << static_cast<void*>(stream) << ", which does not exist (destroyed?)";
    record_violation(os.str());
    return;
  }
  CUstream_st* s = resolve(stream);
  if (s->capturing) {
    if (s->capture) s->capture->push_back(std::move(op));
    std::lock_guard<std::mutex> lock(st().mu);
    ++st().counters.captured_ops;
    return;
  }
  s->queue.push_back(std::move(op));
}

bool check_device_range(const void* p, size_t bytes, Access access, const std::string& what, bool host_ok) {
  std::lock_guard<std::mutex> lock(st().mu);
  const Alloc* a = find_alloc_locked(p);
  const uintptr_t u = reinterpret_cast<uintptr_t>(p);
  const char* verb = access == Access::kRead ? "reads" : "writes";
  if (bytes == 0) return true;
  if (!a || (a->pinned && !host_ok)) {
    violation_locked(what + " " + verb + " " + std::to_string(bytes) + " bytes at " + describe(p) + ": not " +
                     (host_ok ? "CUDA-allocated" : "device") + " memory");
    return false;
  }
  const uintptr_t start = u - (reinterpret_cast<uintptr_t>(a->base) + (a->pinned ? 0 : kGuard));
  if (start + bytes > a->size) {
    violation_locked(what + " " + verb + " " + std::to_string(bytes) + " bytes at " + describe(p) + ", " +
                     std::to_string(start + bytes - a->size) + " bytes beyond the end");
    return false;
  }
  return true;
}

bool is_device_pointer(const void* p) {
  std::lock_guard<std::mutex> lock(st().mu);
  const Alloc* a = find_alloc_locked(p);
  return a && !a->pinned;
}

bool is_pinned_pointer(const void* p) {
  std::lock_guard<std::mutex> lock(st().mu);
  const Alloc* a = find_alloc_locked(p);
  return a && a->pinned;
}

void record_violation(const std::string& message) {
  std::lock_guard<std::mutex> lock(st().mu);
  violation_locked(message);
}

std::vector<std::string> violations() {
  std::lock_guard<std::mutex> lock(st().mu);
  return st().violations;
}

void clear_violations() {
  std::lock_guard<std::mutex> lock(st().mu);
  st().violations.clear();
}

Counters counters() {
  std::lock_guard<std::mutex> lock(st().mu);
  return st().counters;
}

void reset_counters() {
  std::lock_guard<std::mutex> lock(st().mu);
  st().counters = Counters();
}

void count_op(OpKind kind) {
  std::lock_guard<std::mutex> lock(st().mu);
  Counters& c = st().counters;
  (kind == OpKind::kKernel ? c.kernel_launches : kind == OpKind::kLibrary ? c.library_calls : c.copy_ops)++;
}

void scribble(void* p, size_t bytes) {
  if (p && bytes) std::memset(p, kFill, bytes);
}

// Synchronisation points also verify the guard bytes.
void synced(const char* where) { check_guards(where); }

}  // namespace fusert::emu

using namespace fusert::emu;

// ---------------------------------------------------------------- device management
cudaError_t CUDARTAPI cudaGetDeviceCount(int* count) {
  if (!count) return ret(cudaErrorInvalidValue);
  *count = 1;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaSetDevice(int device) { return ret(device == 0 ? cudaSuccess : cudaErrorInvalidDevice); }

cudaError_t CUDARTAPI cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  if (!prop) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  std::memset(prop, 0, sizeof *prop);
  std::snprintf(prop->name, sizeof prop->name, "%s", "fusert CUDA emulator");
  prop->totalGlobalMem = kTotalMemory;
  prop->sharedMemPerBlock = kSharedDefault;
  prop->regsPerBlock = 65536;
  prop->warpSize = 32;
  prop->memPitch = 2147483647;
  prop->maxThreadsPerBlock = 1024;
  prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
  prop->maxThreadsDim[2] = 64;
  prop->maxGridSize[0] = 2147483647;
  prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
  prop->totalConstMem = 65536;
  prop->major = kSmVersion / 10;
  prop->minor = kSmVersion % 10;
  prop->multiProcessorCount = 132;
  prop->canMapHostMemory = 1;
  prop->concurrentKernels = 1;
  prop->asyncEngineCount = 3;
  prop->unifiedAddressing = 1;
  prop->memoryBusWidth = 6144;
  prop->l2CacheSize = 50 << 20;
  prop->maxThreadsPerMultiProcessor = 2048;
  prop->sharedMemPerMultiprocessor = 233472;
  prop->regsPerMultiprocessor = 65536;
  prop->sharedMemPerBlockOptin = kSharedOptin;
  prop->maxBlocksPerMultiProcessor = 32;
  prop->reservedSharedMemPerBlock = 1024;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
  if (!value) return ret(cudaErrorInvalidValue);
  if (device != 0) return ret(cudaErrorInvalidDevice);
  switch (attr) {
    case cudaDevAttrMaxSharedMemoryPerBlockOptin:
      *value = static_cast<int>(kSharedOptin);
      break;
    case cudaDevAttrMaxSharedMemoryPerBlock:
      *value = static_cast<int>(kSharedDefault);
      break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
      *value = 233472;
      break;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      break;
    case cudaDevAttrComputeCapabilityMajor:
      *value = kSmVersion / 10;
      break;
    case cudaDevAttrComputeCapabilityMinor:
      *value = kSmVersion % 10;
      break;
    case cudaDevAttrMaxThreadsPerBlock:
      *value = 1024;
      break;
    case cudaDevAttrWarpSize:
      *value = 32;
      break;
    case cudaDevAttrL2CacheSize:
      *value = 50 << 20;
      break;
    default:
      std::fprintf(stderr, "fusert-emu: cudaDeviceGetAttribute(%d) is not emulated\n", static_cast<int>(attr));
      return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void) {
  if (refuse_during_capture("cudaDeviceSynchronize")) return ret(cudaErrorStreamCaptureUnsupported);
  drain_all();
  synced("cudaDeviceSynchronize");
  return ret(take_async_error());
}

// ---------------------------------------------------------------- errors
cudaError_t CUDARTAPI cudaGetLastError(void) {
  cudaError_t e = t_last_error;
  t_last_error = cudaSuccess;
  return e;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void) { return t_last_error; }

const char* CUDARTAPI cudaGetErrorName(cudaError_t error) { return error_name(error); }

const char* CUDARTAPI cudaGetErrorString(cudaError_t error) { return error_string(error); }

// ---------------------------------------------------------------- memory
cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size) {
  if (!devPtr) return ret(cudaErrorInvalidValue);
  if (refuse_during_capture("cudaMalloc")) return ret(cudaErrorStreamCaptureUnsupported);
  *devPtr = nullptr;
  if (size == 0) return cudaSuccess;
  if (size > kTotalMemory) return ret(cudaErrorMemoryAllocation);
  *devPtr = allocate(size, false);
  return *devPtr ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

cudaError_t CUDARTAPI cudaFree(void* devPtr) {
  if (refuse_during_capture("cudaFree")) return ret(cudaErrorStreamCaptureUnsupported);
  if (!devPtr) return cudaSuccess;
  drain_all();  // cudaFree synchronises the device
  return ret(release(devPtr, false, "cudaFree"));
}

cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size) {
  if (!ptr) return ret(cudaErrorInvalidValue);
  if (refuse_during_capture("cudaMallocHost")) return ret(cudaErrorStreamCaptureUnsupported);
  *ptr = allocate(size == 0 ? 1 : size, true);
  return *ptr ? cudaSuccess : ret(cudaErrorMemoryAllocation);
}

cudaError_t CUDARTAPI cudaFreeHost(void* ptr) {
  if (refuse_during_capture("cudaFreeHost")) return ret(cudaErrorStreamCaptureUnsupported);
  if (!ptr) return cudaSuccess;
  drain_all();
  return ret(release(ptr, true, "cudaFreeHost"));
}

namespace {

// Resolves cudaMemcpyDefault and checks the direction against the pointers.
bool copy_kind(const void* dst, const void* src, size_t count, cudaMemcpyKind kind, const char* call, bool* dst_dev,
               bool* src_dev) {
  const bool d_dev = is_device_pointer(dst), s_dev = is_device_pointer(src);
  if (kind == cudaMemcpyDefault) {
    *dst_dev = d_dev;
    *src_dev = s_dev;
  } else {
    *dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    *src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (*dst_dev != d_dev || *src_dev != s_dev) {
      std::ostringstream os;
      os << call << ": kind " << static_cast<int>(kind) << " but dst " << dst << " is " << (d_dev ? "device" : "host")
         << " memory and src " << src << " is " << (s_dev ? "device" : "host") << " memory";
      record_violation(os.str());
      return false;
    }
  }
  bool ok = true;
  if (*dst_dev) ok &= check_device_range(dst, count, Access::kWrite, std::string(call) + " destination");
  if (*src_dev) ok &= check_device_range(src, count, Access::kRead, std::string(call) + " source");
  if (is_pinned_pointer(dst))
    ok &= check_device_range(dst, count, Access::kWrite, std::string(call) + " destination", true);
  if (is_pinned_pointer(src)) ok &= check_device_range(src, count, Access::kRead, std::string(call) + " source", true);
  return ok;
}

}  // namespace

cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  if (refuse_during_capture("cudaMemcpy")) return ret(cudaErrorStreamCaptureUnsupported);
  if (count == 0) return cudaSuccess;
  bool dd = false, sd = false;
  if (!copy_kind(dst, src, count, kind, "cudaMemcpy", &dd, &sd)) return ret(cudaErrorInvalidValue);
  if (dd && sd) {  // device to device: asynchronous on the legacy stream
    emu_enqueue(nullptr, [=] {
      std::memmove(dst, src, count);
      count_op(OpKind::kCopy);
    });
    return cudaSuccess;
  }
  drain(&st().legacy);  // synchronous with the legacy default stream (not with non-blocking ones)
  std::memmove(dst, src, count);
  count_op(OpKind::kCopy);
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind,
                                      cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  bool dd = false, sd = false;
  if (!copy_kind(dst, src, count, kind, "cudaMemcpyAsync", &dd, &sd)) return ret(cudaErrorInvalidValue);
  const bool pageable_dst = !dd && !is_pinned_pointer(dst), pageable_src = !sd && !is_pinned_pointer(src);
  if ((pageable_dst || pageable_src) && emu_capturing(stream)) {
    record_violation("cudaMemcpyAsync of pageable host memory inside a stream capture");
    return ret(cudaErrorStreamCaptureUnsupported);
  }
  if (pageable_dst) {  // to pageable memory: returns once the copy is done
    drain(resolve(stream));
    std::memmove(dst, src, count);
    count_op(OpKind::kCopy);
    return cudaSuccess;
  }
  if (pageable_src) {  // from pageable memory: staged at the call
    auto staged =
        std::make_shared<std::vector<char>>(static_cast<const char*>(src), static_cast<const char*>(src) + count);
    emu_enqueue(stream, [=] {
      std::memcpy(dst, staged->data(), count);
      count_op(OpKind::kCopy);
    });
    return cudaSuccess;
  }
  emu_enqueue(stream, [=] {
    if (dd && !check_device_range(dst, count, Access::kWrite, "cudaMemcpyAsync destination (at execution)")) return;
    if (sd && !check_device_range(src, count, Access::kRead, "cudaMemcpyAsync source (at execution)")) return;
    std::memmove(dst, src, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count) {
  if (refuse_during_capture("cudaMemset")) return ret(cudaErrorStreamCaptureUnsupported);
  if (count == 0) return cudaSuccess;
  if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemset")) return ret(cudaErrorInvalidValue);
  // Asynchronous with respect to the host for device memory, on the legacy default stream.
  emu_enqueue(nullptr, [=] {
    std::memset(devPtr, value, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMemsetAsync(void* devPtr, int value, size_t count, cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (count == 0) return cudaSuccess;
  if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemsetAsync")) return ret(cudaErrorInvalidValue);
  emu_enqueue(stream, [=] {
    if (!check_device_range(devPtr, count, Access::kWrite, "cudaMemsetAsync (at execution)")) return;
    std::memset(devPtr, value, count);
    count_op(OpKind::kCopy);
  });
  return cudaSuccess;
}

// ---------------------------------------------------------------- streams and events
cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  if (!pStream) return ret(cudaErrorInvalidValue);
  auto* s = new CUstream_st();
  s->flags = flags;
  st().streams.insert(s);
  *pStream = s;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream) {
  if (!stream || !st().streams.count(stream)) return ret(cudaErrorInvalidResourceHandle);
  if (stream->capturing) return ret(cudaErrorIllegalState);
  drain(stream);  // pending work completes before the stream's resources go
  st().streams.erase(stream);
  delete stream;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (s->capturing) {
    refuse_during_capture("cudaStreamSynchronize of a capturing stream");
    return ret(cudaErrorStreamCaptureUnsupported);
  }
  drain(s);
  synced("cudaStreamSynchronize");
  return ret(take_async_error());
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus* pCaptureStatus) {
  if (!pCaptureStatus) return ret(cudaErrorInvalidValue);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  *pCaptureStatus = !s->capturing            ? cudaStreamCaptureStatusNone
                    : s->capture_invalidated ? cudaStreamCaptureStatusInvalidated
                                             : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t* event) {
  if (!event) return ret(cudaErrorInvalidValue);
  auto* e = new CUevent_st();
  st().events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event) {
  if (!event || !st().events.erase(event)) return ret(cudaErrorInvalidResourceHandle);
  // A record still queued would write the freed event: run pending work first.
  drain_all();
  delete event;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  if (!event || !st().events.count(event)) return ret(cudaErrorInvalidResourceHandle);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  event->recorded = true;
  event->done = false;
  emu_enqueue(stream, [event] {
    event->when = std::chrono::steady_clock::now();
    event->done = true;
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!ms) return ret(cudaErrorInvalidValue);
  if (!start || !end || !st().events.count(start) || !st().events.count(end))
    return ret(cudaErrorInvalidResourceHandle);
  if (refuse_during_capture("cudaEventElapsedTime")) return ret(cudaErrorStreamCaptureUnsupported);
  if (!start->recorded || !end->recorded) return ret(cudaErrorInvalidResourceHandle);
  if (!start->done || !end->done) return ret(cudaErrorNotReady);
  *ms = std::chrono::duration<float, std::milli>(end->when - start->when).count();
  return cudaSuccess;
}

// ---------------------------------------------------------------- stream capture and graphs
cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode) {
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  if (s == &st().legacy) return ret(cudaErrorStreamCaptureUnsupported);  // the legacy stream cannot capture
  if (s->capturing) return ret(cudaErrorIllegalState);
  s->capturing = true;
  s->capture_invalidated = false;
  s->mode = mode;
  s->capture = std::make_shared<OpList>();
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* pGraph) {
  if (!pGraph) return ret(cudaErrorInvalidValue);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  CUstream_st* s = resolve(stream);
  *pGraph = nullptr;
  if (!s->capturing) return ret(cudaErrorIllegalState);
  s->capturing = false;
  std::shared_ptr<OpList> ops = std::move(s->capture);
  if (s->capture_invalidated) {
    s->capture_invalidated = false;
    return ret(cudaErrorStreamCaptureInvalidated);
  }
  *pGraph = new CUgraph_st{std::move(ops)};
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t* pGraphExec, cudaGraph_t graph, unsigned long long flags) {
  (void)flags;
  if (!pGraphExec || !graph) return ret(cudaErrorInvalidValue);
  *pGraphExec = new CUgraphExec_st{std::make_shared<const OpList>(*graph->ops)};
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream) {
  if (!graphExec) return ret(cudaErrorInvalidValue);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  std::shared_ptr<const OpList> ops = graphExec->ops;  // survives cudaGraphExecDestroy of a pending launch
  {
    std::lock_guard<std::mutex> lock(st().mu);
    ++st().counters.graph_launches;
  }
  emu_enqueue(stream, [ops] {
    for (const auto& op : *ops) op();
  });
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph) {
  if (!graph) return ret(cudaErrorInvalidValue);
  delete graph;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec) {
  if (!graphExec) return ret(cudaErrorInvalidValue);
  delete graphExec;
  return cudaSuccess;
}

// ---------------------------------------------------------------- libraries and kernels
cudaError_t CUDARTAPI cudaLibraryLoadData(cudaLibrary_t* library, const void* code, enum cudaJitOption* jitOptions,
                                          void** jitOptionsValues, unsigned int numJitOptions,
                                          enum cudaLibraryOption* libraryOptions, void** libraryOptionValues,
                                          unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)numJitOptions;
  (void)libraryOptions;
  (void)libraryOptionValues;
  (void)numLibraryOptions;
  if (!library || !code) return ret(cudaErrorInvalidValue);
  *library = nullptr;
  const auto* eh = static_cast<const Elf64_Ehdr*>(code);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64) {
    record_violation("cudaLibraryLoadData: the image is not a 64-bit ELF cubin");
    return ret(cudaErrorInvalidKernelImage);
  }
  const unsigned arch = (eh->e_flags >> 8) & 0xFF;
  if (eh->e_machine != EM_CUDA || arch != kSmVersion) {
    std::fprintf(stderr, "fusert-emu: cudaLibraryLoadData: cubin for machine %u sm_%u, the device is sm_%d\n",
                 eh->e_machine, arch, kSmVersion);
    return ret(cudaErrorNoKernelImageForDevice);
  }
  auto* lib = new CUlib_st();
  const char* bytes = static_cast<const char*>(code);
  lib->image.assign(bytes, bytes + elf_size(code));
  if (!elf_ok(lib->image)) {
    delete lib;
    return ret(cudaErrorInvalidKernelImage);
  }
  st().libraries.insert(lib);
  *library = lib;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLibraryGetKernel(cudaKernel_t* pKernel, cudaLibrary_t library, const char* name) {
  if (!pKernel || !name) return ret(cudaErrorInvalidValue);
  if (!library || !st().libraries.count(library)) return ret(cudaErrorInvalidResourceHandle);
  *pKernel = nullptr;
  const CubinKernel info = parse_kernel(library->image, name);
  if (!info.found) return ret(cudaErrorSymbolNotFound);
  const fusert::cuda::KernelReference* ref = fusert::cuda::find_kernel_reference(name);
  if (!ref) {
    std::fprintf(stderr, "fusert-emu: kernel '%s' is in the cubin but has no host reference\n", name);
    return ret(cudaErrorSymbolNotFound);
  }
  auto* k = new CUkern_st();
  k->lib = library;
  k->entry = name;
  if (k->entry.rfind("fz_", 0) == 0) {
    const size_t end = k->entry.rfind('_');
    if (end > 3) k->kind = k->entry.substr(3, end - 3);
  }
  k->ref = ref;
  k->param_bytes = info.param_bytes;
  k->max_threads = info.max_threads > 0 ? info.max_threads : 1024;
  k->static_shared = info.static_shared;
  k->max_dynamic_shared = static_cast<int>(kSharedDefault - std::min(kSharedDefault, info.static_shared));
  const size_t expect = sizeof_args(k->kind);
  if (expect && info.param_bytes != expect) {
    record_violation("kernel " + k->entry + ": the cubin takes " + std::to_string(info.param_bytes) +
                     " parameter bytes, the host ABI struct has " + std::to_string(expect));
  }
  if (std::getenv("FUSERT_EMU_TRACE")) {
    std::fprintf(stderr, "fusert-emu: loaded %s: %zu parameter bytes, %d threads max, %zu static shared bytes\n", name,
                 k->param_bytes, k->max_threads, k->static_shared);
  }
  st().kernels.insert(k);
  st().lib_kernels[library].push_back(k);
  *pKernel = k;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaLibraryUnload(cudaLibrary_t library) {
  if (!library || !st().libraries.count(library)) return ret(cudaErrorInvalidResourceHandle);
  drain_all();  // queued launches of its kernels run first
  for (CUkern_st* k : st().lib_kernels[library]) {
    st().kernels.erase(k);
    delete k;
  }
  st().lib_kernels.erase(library);
  st().libraries.erase(library);
  delete library;
  return cudaSuccess;
}

namespace {

CUkern_st* as_kernel(const void* func) {
  auto* k = const_cast<CUkern_st*>(static_cast<const CUkern_st*>(func));
  return st().kernels.count(k) ? k : nullptr;
}

}  // namespace

cudaError_t CUDARTAPI cudaFuncGetAttributes(struct cudaFuncAttributes* attr, const void* func) {
  if (!attr) return ret(cudaErrorInvalidValue);
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  std::memset(attr, 0, sizeof *attr);
  attr->sharedSizeBytes = k->static_shared;
  attr->maxThreadsPerBlock = k->max_threads;
  attr->numRegs = 32;
  attr->ptxVersion = kSmVersion;
  attr->binaryVersion = kSmVersion;
  attr->maxDynamicSharedSizeBytes = k->max_dynamic_shared;
  return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || static_cast<size_t>(value) + k->static_shared > kSharedOptin) return ret(cudaErrorInvalidValue);
      k->max_dynamic_shared = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      return value >= -1 && value <= 100 ? cudaSuccess : ret(cudaErrorInvalidValue);
    default:
      return ret(cudaErrorInvalidValue);
  }
}

cudaError_t CUDARTAPI cudaLaunchKernel(const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
                                       cudaStream_t stream) {
  CUkern_st* k = as_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  if (!valid_stream(stream)) return ret(cudaErrorInvalidResourceHandle);
  const uint64_t threads = uint64_t{blockDim.x} * blockDim.y * blockDim.z;
  if (gridDim.x == 0 || gridDim.y == 0 || gridDim.z == 0 || gridDim.x > 2147483647u || gridDim.y > 65535 ||
      gridDim.z > 65535 || threads == 0 || threads > 1024 || blockDim.z > 64) {
    return ret(cudaErrorInvalidConfiguration);
  }
  if (threads > static_cast<uint64_t>(k->max_threads)) return ret(cudaErrorLaunchOutOfResources);
  if (sharedMem > static_cast<size_t>(k->max_dynamic_shared)) {
    std::fprintf(stderr, "fusert-emu: %s: %zu bytes of dynamic shared memory, the kernel allows %d\n", k->entry.c_str(),
                 sharedMem, k->max_dynamic_shared);
    return ret(cudaErrorInvalidValue);
  }
  if (!args || !args[0]) return ret(cudaErrorInvalidValue);
  // Parameters are copied at the launch, as the runtime does.
  const size_t bytes = k->param_bytes ? k->param_bytes : sizeof_args(k->kind);
  if (!bytes) return ret(cudaErrorInvalidValue);
  auto params = std::make_shared<std::vector<unsigned char>>(bytes);
  std::memcpy(params->data(), args[0], bytes);
  const bool ok = check_args(*k, params->data(), gridDim, sharedMem);
  const fusert::cuda::KernelReference* ref = k->ref;
  const std::string entry = k->entry;
  const CUkern_st* handle = k;
  emu_enqueue(stream, [=] {
    if (!st().kernels.count(handle)) {
      record_violation("kernel " + entry + " launched after its library was unloaded");
      return;
    }
    // Allocations may have been freed since the launch (a replayed graph): check again.
    if (!ok || !check_args(*handle, params->data(), gridDim, sharedMem)) return;
    (*ref)(params->data(), gridDim.x, gridDim.y, gridDim.z);
    count_op(OpKind::kKernel);
  });
  return cudaSuccess;
}
