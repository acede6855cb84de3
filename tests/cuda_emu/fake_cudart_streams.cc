// Emulated CUDA runtime: streams (work queued until the host synchronises), events, stream
// capture and CUDA Graphs (captured work replayed by cudaGraphLaunch).
#include <cuda_runtime_api.h>
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudart_internal.h"
#include "tests/cuda_oracle/kernel_reference.h"

using namespace fusert::emu;
using namespace fusert::emu::detail;

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
  check_guards("cudaStreamSynchronize");
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
