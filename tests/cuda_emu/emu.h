// Internal interface of the CUDA emulation (tests/cuda_emu): the fake CUDA runtime, cuDNN and
// cuBLASLt that fusert_emu links instead of the real libraries, so the CUDA backend runs end to
// end on the CPU. "Device" memory is host memory handed out by the fake cudaMalloc; every
// stream keeps a queue of operations that run (in order, on the calling thread) when the host
// synchronises with it, so a missing synchronisation reads stale data as it would on a GPU.
// While a stream is being captured, operations are recorded into the CUDA Graph instead, and
// cudaGraphLaunch replays the recording.
//
// The fakes also check what a real device would only fault on, or silently get wrong: every
// pointer a library call, layout kernel or generated kernel reads or writes must lie, with its
// whole extent, inside one live cudaMalloc allocation (or pinned host memory for copies); fresh
// allocations are filled with 0xFF bytes (NaN as f32) and surrounded by guard bytes that are
// verified on free and at every synchronisation. Each finding is recorded as a violation
// (violations() below) and printed to stderr once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fusert::emu {

/// True while `stream` is being captured into a CUDA Graph.
bool emu_capturing(cudaStream_t stream);
/// Enqueues `op` on `stream` (the legacy default stream for nullptr): recorded into the graph
/// when the stream is capturing, else queued to run when the host synchronises with the stream.
void emu_enqueue(cudaStream_t stream, std::function<void()> op);

/// What a checked pointer is used for, in violation messages.
enum class Access { kRead, kWrite };
/// True when [p, p + bytes) lies inside one live device allocation (any pinned host allocation
/// too when `host_ok`); otherwise records a violation naming `what` and returns false. A
/// zero-byte range only needs a valid or null pointer.
bool check_device_range(const void* p, size_t bytes, Access access, const std::string& what, bool host_ok = false);
/// True when p lies in a live device allocation (no violation recorded).
bool is_device_pointer(const void* p);
/// True when p lies in live pinned host memory (cudaMallocHost).
bool is_pinned_pointer(const void* p);

/// Records a violation (also printed to stderr, at most the first 50 times).
void record_violation(const std::string& message);
/// Every violation recorded since the last clear_violations().
std::vector<std::string> violations();
void clear_violations();

/// What the emulated device did since the last reset_counters().
struct Counters {
  int64_t kernel_launches = 0;  ///< generated kernels run (eager or replayed)
  int64_t library_calls = 0;    ///< cuDNN / cuBLASLt computations run
  int64_t copy_ops = 0;         ///< memcpy / memset / layout kernels run
  int64_t graph_launches = 0;   ///< cudaGraphLaunch calls
  int64_t captured_ops = 0;     ///< operations recorded into graphs
  int64_t syncs = 0;            ///< host synchronisations that ran queued work
};
Counters counters();
void reset_counters();
/// Counts one executed operation of the given kind (used by the fakes).
enum class OpKind { kKernel, kLibrary, kCopy };
void count_op(OpKind kind);

/// Testing: while on, the fake cuBLASLt finds no algorithm for any epilogue but DEFAULT (as a
/// real one may not at some shape), so LtGemm's fallback runs.
void set_lt_epilogues_refused(bool refused);

/// Scribbles `bytes` of workspace with a NaN pattern, as a library using it would overwrite it.
void scribble(void* p, size_t bytes);

}  // namespace fusert::emu
