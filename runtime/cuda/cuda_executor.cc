// The CUDA device: weight upload, per-context device arena and pinned staging, the step loop
// with host fallback, CUDA Graph capture and replay, CUDA-event timing.
#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

namespace fusert::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// FUSERT_CUDA_SYNC_STEPS=1: synchronise and check after every device step, so that a fault is
// reported with the step that caused it (a CUDA error is otherwise seen at the run's final
// synchronisation). Turns CUDA Graph capture off. For diagnosis, not for timing.
bool sync_steps() {
  static const bool on = [] {
    const char* e = std::getenv("FUSERT_CUDA_SYNC_STEPS");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return on;
}

}  // namespace

/// One execution context: everything a run writes.
struct CudaDevice::RunState final : ExecContext {
  uint8_t* arena = nullptr;       ///< device
  uint8_t* host_arena = nullptr;  ///< pinned host mirror (staging, host-fallback steps)
  float* scratch = nullptr;
  float* alias_scratch = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  bool graph_off = false;  ///< capture failed once: this context runs eagerly
  int64_t runs = 0;
  ~RunState() override {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    cudaFree(arena);
    cudaFreeHost(host_arena);
    cudaFree(scratch);
    cudaFree(alias_scratch);
  }
};

Result<std::unique_ptr<CudaDevice>> CudaDevice::create(const Graph& g, const CudaPlan& plan,
                                                       const ExecutionPlan& memory, const ExecutorOptions& opt) {
  std::unique_ptr<CudaDevice> dev(new CudaDevice(g, plan, memory));
  dev->opt_ = opt;
  FUSERT_ASSIGN_OR_RETURN(dev->ctx_, Context::create(0));
  dev->ctx_->tf32 = opt.tf32;
  // Weights read by device steps: one buffer, uploaded once.
  ArenaBuffers roots(g, memory, nullptr);
  std::set<ValueId> weights;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.dsteps[i].host) continue;
    const std::vector<ValueId>& skip = plan.dsteps[i].skip_weights;
    for (ValueId v : plan.steps[i].inputs) {
      if (std::find(skip.begin(), skip.end(), v) != skip.end()) continue;
      ValueId r = roots.root(v);
      if (g.value(r).is_initializer && !g.value(r).data.empty()) weights.insert(r);
    }
  }
  std::map<ValueId, size_t> offset;
  size_t total = 0;
  for (ValueId v : weights) {
    offset[v] = total;
    total += align_up(g.value(v).data.nbytes());
  }
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&dev->weights_), std::max<size_t>(total, kAlign)), "weights");
  for (ValueId v : weights) {
    const Tensor& t = g.value(v).data;
    dev->weight_ptr_[v] = dev->weights_ + offset[v];
    CUDA_CHECK(cudaMemcpy(dev->weight_ptr_[v], t.raw(), t.nbytes(), cudaMemcpyHostToDevice),
               "uploading weight '" + g.value(v).name + "'");
  }
  dev->scratch_bytes_ = kAlign;
  for (const DeviceStep& d : plan.dsteps) dev->scratch_bytes_ = std::max(dev->scratch_bytes_, d.scratch_bytes);
  for (const GeneratedKernel& k : plan.kernels) {
    FUSERT_ASSIGN_OR_RETURN(LoadedKernel lk, dev->ctx_->load(k.bin, k.groups.empty() ? k.src.entry : k.groups[0]));
    dev->kernels_.push_back(lk);
  }
  for (const DeviceStep& d : plan.dsteps) {
    dev->has_host_steps_ |= d.host;
    if (d.prepare) FUSERT_RETURN_IF_ERROR(d.prepare(*dev->ctx_));
  }
  CUDA_CHECK(cudaDeviceSynchronize(), "prepare");
  return dev;
}

CudaDevice::~CudaDevice() { cudaFree(weights_); }

std::string CudaDevice::device_name() const { return ctx_ ? ctx_->device_name() : std::string(); }

Result<std::unique_ptr<ExecContext>> CudaDevice::create_context() const {
  auto rs = std::make_unique<RunState>();
  const size_t arena = std::max<size_t>(mem_.arena_bytes, kAlign);
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&rs->arena), arena), "activation arena");
  // Zeroed once: a library call that names a buffer it does not read (cuDNN's z with alpha2 = 0)
  // never sees uninitialised NaN bit patterns.
  CUDA_CHECK(cudaMemset(rs->arena, 0, arena), "activation arena");
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&rs->host_arena), arena), "pinned staging buffer");
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&rs->scratch), scratch_bytes_), "scratch");
  CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void**>(&rs->alias_scratch), std::max<size_t>(2 * plan_.alias_scratch_bytes, kAlign)),
      "alias scratch");
  CUDA_CHECK(cudaEventCreate(&rs->start), "timing events");
  CUDA_CHECK(cudaEventCreate(&rs->stop), "timing events");
  CUDA_CHECK(cudaDeviceSynchronize(), "execution context");
  return std::unique_ptr<ExecContext>(std::move(rs));
}

Status CudaDevice::enqueue_steps(RunState& rs, const RunEnv& env, bool capturing) const {
  cudaStream_t s = ctx_->stream();
  ArenaBuffers host(g_, mem_, rs.host_arena);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const Step& step = plan_.steps[i];
    const DeviceStep& d = plan_.dsteps[i];
    if (step.alias_of != kNoValue) continue;
    if (!d.host) {
      FUSERT_RETURN_IF_ERROR(d.run(env));
      if (!capturing && sync_steps()) {
        const std::string what = "step " + std::to_string(i) + " '" + step.name + "' (FUSERT_CUDA_SYNC_STEPS)";
        CUDA_CHECK(cudaGetLastError(), what);
        CUDA_CHECK(cudaStreamSynchronize(s), what);
      }
      continue;
    }
    if (capturing) return error(StatusCode::kInternal) << "host step '" << step.name << "' inside a CUDA Graph capture";
    // Host fallback: bring the step's activations to the host, run its CPU kernel, send back.
    for (ValueId v : step.inputs) {
      if (g_.value(host.root(v)).is_initializer) continue;
      const BufferSlot& sl = host.slot(v);
      CUDA_CHECK(cudaMemcpyAsync(rs.host_arena + sl.offset, rs.arena + sl.offset, sl.bytes, cudaMemcpyDeviceToHost, s),
                 step.name);
    }
    CUDA_CHECK(cudaStreamSynchronize(s), step.name);
    if (step.check) FUSERT_RETURN_IF_ERROR(step.check(host));
    step.run(host);
    for (ValueId v : step.outputs) {
      const BufferSlot& sl = host.slot(v);
      CUDA_CHECK(cudaMemcpyAsync(rs.arena + sl.offset, rs.host_arena + sl.offset, sl.bytes, cudaMemcpyHostToDevice, s),
                 step.name);
    }
  }
  return Status();
}

// Captures the steps once into a CUDA Graph. A capture that fails turns CUDA Graphs off for
// this context, with a warning; the run goes on eagerly.
Status CudaDevice::capture(RunState& rs, const RunEnv& env) const {
  cudaStream_t s = ctx_->stream();
  cudaGraph_t captured = nullptr;
  Status st =
      cuda_status(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture", "CUDA Graph");
  if (st.ok()) {
    st = enqueue_steps(rs, env, true);
    cudaError_t end = cudaStreamEndCapture(s, &captured);
    if (st.ok()) st = cuda_status(end, "cudaStreamEndCapture", "CUDA Graph");
  }
  if (st.ok())
    st = cuda_status(cudaGraphInstantiate(&rs.graph_exec, captured, 0), "cudaGraphInstantiate", "CUDA Graph");
  if (captured) cudaGraphDestroy(captured);
  if (!st.ok()) {
    cudaGetLastError();
    rs.graph_exec = nullptr;
    rs.graph_off = true;
    std::fprintf(stderr, "fusert: CUDA Graph capture failed, running eagerly: %s\n", st.message().c_str());
  }
  return Status();
}

Status CudaDevice::run(ExecContext& ctx, const std::vector<const Tensor*>& inputs, const std::vector<Tensor*>& outputs,
                       std::vector<double>* step_ms, RunInfo* info) const {
  (void)step_ms;
  RunState& rs = static_cast<RunState&>(ctx);
  cudaStream_t s = ctx_->stream();
  ArenaBuffers host(g_, mem_, rs.host_arena);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueId id = g_.inputs[i];
    const size_t off = host.slot(id).offset;
    std::memcpy(rs.host_arena + off, inputs[i]->raw(), inputs[i]->nbytes());
    CUDA_CHECK(cudaMemcpyAsync(rs.arena + off, rs.host_arena + off, inputs[i]->nbytes(), cudaMemcpyHostToDevice, s),
               "input '" + g_.value(id).name + "'");
  }
  ArenaBuffers dev(g_, mem_, rs.arena, &weight_ptr_);
  RunEnv env{*ctx_, plan_, kernels_, dev, rs.scratch, rs.alias_scratch, 2 * plan_.alias_scratch_bytes / sizeof(float)};
  // The first run is eager (libraries load their kernels lazily, and real errors surface with
  // their step's name); the second captures the plan once and every later run replays it.
  if (opt_.cuda_graph && !sync_steps() && !rs.graph_off && !has_host_steps_ && rs.runs > 0 && !rs.graph_exec)
    FUSERT_RETURN_IF_ERROR(capture(rs, env));
  const bool graph = rs.graph_exec != nullptr;
  CUDA_CHECK(cudaEventRecord(rs.start, s), "timing");
  if (graph) {
    CUDA_CHECK(cudaGraphLaunch(rs.graph_exec, s), "CUDA Graph launch");
  } else {
    FUSERT_RETURN_IF_ERROR(enqueue_steps(rs, env, false));
  }
  CUDA_CHECK(cudaEventRecord(rs.stop, s), "timing");
  ++rs.runs;
  for (ValueId id : g_.outputs) {
    if (g_.value(host.root(id)).is_initializer) continue;
    const BufferSlot& sl = host.slot(id);
    CUDA_CHECK(cudaMemcpyAsync(rs.host_arena + sl.offset, rs.arena + sl.offset, sl.bytes, cudaMemcpyDeviceToHost, s),
               "output");
  }
  CUDA_CHECK(cudaStreamSynchronize(s), "run");
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, rs.start, rs.stop), "timing");
  info->device_ms = ms;
  info->cuda_graph = graph;
  for (const DeviceStep& d : plan_.dsteps)
    if (d.after) FUSERT_RETURN_IF_ERROR(d.after());
  for (size_t i = 0; i < outputs.size(); ++i)
    std::memcpy(outputs[i]->raw(), host.raw(g_.outputs[i]), outputs[i]->nbytes());
  return Status();
}

}  // namespace fusert::cuda
