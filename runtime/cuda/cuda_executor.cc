// The CUDA executor: device arena, weight upload, pinned staging, the step loop with host
// fallback, CUDA Graph capture and replay, CUDA-event timing.
#include "runtime/cuda/cuda_executor.h"

#include "runtime/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <set>

namespace fusert::cuda {

namespace {

constexpr size_t kAlign = 256;
size_t align_up(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Device or host pointers of every value: arena slots, or weights.
class Table : public BufferTable {
 public:
  Table(const Graph& g, const ExecutionPlan& p, uint8_t* arena, uint8_t* weights,
        const std::map<ValueId, size_t>* offsets)
      : g_(g), p_(p), arena_(arena), weights_(weights), offsets_(offsets) {}
  void* raw(ValueId id) const override {
    ValueId root = p_.slots[static_cast<size_t>(id)].root;
    if (root == kNoValue) root = id;
    const Value& v = g_.value(root);
    if (v.is_initializer) {
      if (!offsets_) return const_cast<void*>(v.data.raw());  // host table: the graph's own data
      auto it = offsets_->find(root);
      return it == offsets_->end() ? nullptr : weights_ + it->second;
    }
    return arena_ + p_.slots[static_cast<size_t>(id)].offset;
  }
  float* f32(ValueId id) const override { return static_cast<float*>(raw(id)); }

 private:
  const Graph& g_;
  const ExecutionPlan& p_;
  uint8_t* arena_;
  uint8_t* weights_;
  const std::map<ValueId, size_t>* offsets_;
};

ValueId root_of(const ExecutionPlan& p, ValueId id) {
  ValueId r = p.slots[static_cast<size_t>(id)].root;
  return r == kNoValue ? id : r;
}

}  // namespace

Result<std::unique_ptr<CudaExecutor>> CudaExecutor::create(const Graph& g, const CudaPlan& plan,
                                                           const ExecutionPlan& memory, const ExecutorOptions& opt) {
  std::unique_ptr<CudaExecutor> ex(new CudaExecutor(g, plan, memory));
  ex->opt_ = opt;
  FUSERT_ASSIGN_OR_RETURN(ex->ctx_, Context::create(0));
  ex->ctx_->tf32 = opt.tf32;
  const std::string what = "executor";
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ex->arena_), std::max<size_t>(memory.arena_bytes, kAlign)),
             "activation arena");
  // Zeroed once: a library call that names a buffer it does not read (cuDNN's z with alpha2 = 0)
  // never sees uninitialised NaN bit patterns.
  CUDA_CHECK(cudaMemset(ex->arena_, 0, std::max<size_t>(memory.arena_bytes, kAlign)), "activation arena");
  CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ex->host_arena_), std::max<size_t>(memory.arena_bytes, kAlign)),
             "pinned staging buffer");
  // Weights read by device steps: one buffer, uploaded once.
  std::set<ValueId> weights;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (plan.dsteps[i].host) continue;
    const std::vector<ValueId>& skip = plan.dsteps[i].skip_weights;
    for (ValueId v : plan.steps[i].inputs) {
      if (std::find(skip.begin(), skip.end(), v) != skip.end()) continue;
      ValueId r = root_of(memory, v);
      if (g.value(r).is_initializer && !g.value(r).data.empty()) weights.insert(r);
    }
  }
  size_t total = 0;
  for (ValueId v : weights) {
    ex->weight_offset_[v] = total;
    total += align_up(g.value(v).data.nbytes());
  }
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ex->weights_), std::max<size_t>(total, kAlign)), "weights");
  for (ValueId v : weights) {
    const Tensor& t = g.value(v).data;
    CUDA_CHECK(cudaMemcpy(ex->weights_ + ex->weight_offset_[v], t.raw(), t.nbytes(), cudaMemcpyHostToDevice),
               "uploading weight '" + g.value(v).name + "'");
  }
  size_t scratch = kAlign;
  for (const DeviceStep& d : plan.dsteps) scratch = std::max(scratch, d.scratch_bytes);
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ex->scratch_), scratch), "scratch");
  CUDA_CHECK(
      cudaMalloc(reinterpret_cast<void**>(&ex->alias_scratch_), std::max<size_t>(2 * plan.alias_scratch_bytes, kAlign)),
      "alias scratch");
  for (const GeneratedKernel& k : plan.kernels) {
    FUSERT_ASSIGN_OR_RETURN(LoadedKernel lk, ex->ctx_->load(k.bin, k.groups.empty() ? k.src.entry : k.groups[0]));
    ex->kernels_.push_back(lk);
  }
  for (const DeviceStep& d : plan.dsteps) {
    ex->has_host_steps_ |= d.host;
    if (d.prepare) FUSERT_RETURN_IF_ERROR(d.prepare(*ex->ctx_));
  }
  CUDA_CHECK(cudaEventCreate(&ex->start_), what);
  CUDA_CHECK(cudaEventCreate(&ex->stop_), what);
  CUDA_CHECK(cudaDeviceSynchronize(), "prepare");
  return ex;
}

CudaExecutor::~CudaExecutor() {
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  cudaFree(arena_);
  cudaFreeHost(host_arena_);
  cudaFree(weights_);
  cudaFree(scratch_);
  cudaFree(alias_scratch_);
}

std::string CudaExecutor::device_name() const { return ctx_ ? ctx_->device_name() : std::string(); }

Status CudaExecutor::enqueue_steps(const RunEnv& env, bool capturing) {
  cudaStream_t s = ctx_->stream();
  Table host(g_, mem_, host_arena_, nullptr, nullptr);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    const Step& step = plan_.steps[i];
    const DeviceStep& d = plan_.dsteps[i];
    if (step.alias_of != kNoValue) continue;
    if (!d.host) {
      FUSERT_RETURN_IF_ERROR(d.run(env));
      continue;
    }
    if (capturing) return error(StatusCode::kInternal) << "host step '" << step.name << "' inside a CUDA Graph capture";
    // Host fallback: bring the step's activations to the host, run its CPU kernel, send back.
    for (ValueId v : step.inputs) {
      if (g_.value(root_of(mem_, v)).is_initializer) continue;
      const BufferSlot& sl = mem_.slots[static_cast<size_t>(v)];
      CUDA_CHECK(cudaMemcpyAsync(host_arena_ + sl.offset, arena_ + sl.offset, sl.bytes, cudaMemcpyDeviceToHost, s),
                 step.name);
    }
    CUDA_CHECK(cudaStreamSynchronize(s), step.name);
    if (step.check) FUSERT_RETURN_IF_ERROR(step.check(host));
    step.run(host);
    for (ValueId v : step.outputs) {
      const BufferSlot& sl = mem_.slots[static_cast<size_t>(v)];
      CUDA_CHECK(cudaMemcpyAsync(arena_ + sl.offset, host_arena_ + sl.offset, sl.bytes, cudaMemcpyHostToDevice, s),
                 step.name);
    }
  }
  return Status();
}

Result<std::map<std::string, Tensor>> CudaExecutor::run(const std::map<std::string, Tensor>& inputs) {
  FUSERT_RETURN_IF_ERROR(check_inputs(g_, inputs));
  cudaStream_t s = ctx_->stream();
  for (ValueId id : g_.inputs) {
    const Value& v = g_.value(id);
    const Tensor& t = inputs.at(v.name);
    const BufferSlot& sl = mem_.slots[static_cast<size_t>(id)];
    std::memcpy(host_arena_ + sl.offset, t.raw(), t.nbytes());
    CUDA_CHECK(cudaMemcpyAsync(arena_ + sl.offset, host_arena_ + sl.offset, t.nbytes(), cudaMemcpyHostToDevice, s),
               "input '" + v.name + "'");
  }
  Table dev(g_, mem_, arena_, weights_, &weight_offset_);
  RunEnv env{*ctx_, plan_, kernels_, dev, scratch_, alias_scratch_, 2 * plan_.alias_scratch_bytes / sizeof(float)};
  // The first run is eager (libraries load their kernels lazily, and real errors surface with
  // their step's name); the second captures the plan once and every later run replays it.
  // A capture that fails turns CUDA Graphs off for this executor, with a warning.
  if (opt_.cuda_graph && !has_host_steps_ && runs_ > 0 && !graph_exec_) {
    cudaGraph_t captured = nullptr;
    Status st = cuda_status(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture",
                            "CUDA Graph");
    if (st.ok()) {
      st = enqueue_steps(env, true);
      cudaError_t end = cudaStreamEndCapture(s, &captured);
      if (st.ok()) st = cuda_status(end, "cudaStreamEndCapture", "CUDA Graph");
    }
    if (st.ok())
      st = cuda_status(cudaGraphInstantiate(&graph_exec_, captured, 0), "cudaGraphInstantiate", "CUDA Graph");
    if (captured) cudaGraphDestroy(captured);
    if (!st.ok()) {
      cudaGetLastError();
      graph_exec_ = nullptr;
      opt_.cuda_graph = false;
      std::fprintf(stderr, "fusert: CUDA Graph capture failed, running eagerly: %s\n", st.message().c_str());
    }
  }
  const bool graph = graph_exec_ != nullptr;
  CUDA_CHECK(cudaEventRecord(start_, s), "timing");
  if (graph) {
    CUDA_CHECK(cudaGraphLaunch(graph_exec_, s), "CUDA Graph launch");
  } else {
    FUSERT_RETURN_IF_ERROR(enqueue_steps(env, false));
  }
  CUDA_CHECK(cudaEventRecord(stop_, s), "timing");
  graph_ok_ = graph;
  ++runs_;
  for (ValueId id : g_.outputs) {
    const BufferSlot& sl = mem_.slots[static_cast<size_t>(id)];
    if (g_.value(root_of(mem_, id)).is_initializer) continue;
    CUDA_CHECK(cudaMemcpyAsync(host_arena_ + sl.offset, arena_ + sl.offset, sl.bytes, cudaMemcpyDeviceToHost, s),
               "output");
  }
  CUDA_CHECK(cudaStreamSynchronize(s), "run");
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_), "timing");
  last_ms_ = ms;
  for (const DeviceStep& d : plan_.dsteps)
    if (d.after) FUSERT_RETURN_IF_ERROR(d.after());
  std::map<std::string, Tensor> out;
  Table host(g_, mem_, host_arena_, nullptr, nullptr);
  for (ValueId id : g_.outputs) {
    const Value& v = g_.value(id);
    Tensor t(v.dtype, v.shape);
    std::memcpy(t.raw(), host.raw(id), t.nbytes());
    out.emplace(v.name, std::move(t));
  }
  return out;
}

}  // namespace fusert::cuda
