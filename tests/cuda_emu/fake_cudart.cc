// Emulated CUDA runtime (the subset fusert uses), for fusert_emu: one "fusert CUDA emulator"
// device of compute capability 9.0 whose memory is host memory. Streams queue their work until
// the host synchronises; capture records it into CUDA Graphs that cudaGraphLaunch replays.
// Generated kernels load from their real cubins (checked in fake_kernels.cc: ELF, entry, the
// parameter size, launch bounds and static shared memory read from the cubin's .nv.info and
// .nv.shared sections) and run as their host references (tests/cuda_oracle/kernel_reference.h);
// their argument structs (kernel_abi.h) are checked against the allocations they point into.
// Signatures follow /usr/local/cuda/include/cuda_runtime_api.h (extern "C" from the header).
// This file: the global state and its helpers (fake_cudart_internal.h) and the emu.h API;
// fake_cudart_device.cc (device, errors), fake_cudart_memory.cc, fake_cudart_streams.cc
// (streams, events, capture, CUDA Graphs) and fake_cudart_launch.cc (libraries, kernels,
// launches) the runtime calls.
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

namespace detail {

// ---------------------------------------------------------------- global state
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

}  // namespace detail

using namespace detail;

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

}  // namespace fusert::emu
