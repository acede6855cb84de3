// The CUDA backend: lowering + kernel dump + stats + executor behind the Backend interface.
#include "runtime/cuda/cuda_backend.h"

#include "runtime/cpu/lower_cpu.h"
#include "runtime/cuda/cuda_lowering.h"
#include "runtime/cuda/cuda_roofline.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace fusert::cuda {

namespace {

Status dump_kernels(const CudaPlan& plan, const std::string& dir) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return error(StatusCode::kIoError) << dir << ": cannot create the --dump-kernels directory ("
                                       << std::strerror(errno) << ")";
  }
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return error(StatusCode::kIoError) << dir << ": --dump-kernels needs a directory, and this is not one";
  }
  for (const GeneratedKernel& k : plan.kernels) {
    const std::string path = dir + "/" + k.src.entry + ".cu";
    std::ofstream f(path);
    f << "// fusert generated kernel " << k.src.entry << " (sm_90: " << k.bin.registers << " registers, "
      << k.bin.spill_bytes() << " spill bytes)\n// used by:";
    for (const std::string& grp : k.groups) f << " " << grp;
    f << "\n" << k.src.source;
    f.close();
    if (!f) return error(StatusCode::kIoError) << path << ": write failed";
  }
  return Status();
}

// The cache directory as the report shows it, saying when compiled kernels cannot be kept.
std::string cache_state(const std::string& dir) {
  if (dir.empty()) return "none: no FUSERT_CACHE_DIR, XDG_CACHE_HOME or HOME";
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && (!S_ISDIR(st.st_mode) || ::access(dir.c_str(), W_OK) != 0)) {
    return dir + ", not a writable directory: kernels are compiled on every load";
  }
  return dir;
}

}  // namespace

Status CudaBackend::available() const { return check_cuda_device(); }

void CudaBackend::configure_planner(FusionOptions* o, bool will_lower) {
  if (!will_lower) return;
  o->supports = check_capability;
  compiled_before_ = compile_counters();  // every compile of this load, the planner's probes included
  o->measure_registers = probe_registers;
  if (options_.register_budget > 0) o->measured_register_budget = options_.register_budget;
}

Result<std::vector<Step>> CudaBackend::lower(const Graph& g, const FusionPlan& plan) {
  FUSERT_ASSIGN_OR_RETURN(plan_, lower_plan_cuda(g, plan));
  if (!options_.dump_kernels.empty()) FUSERT_RETURN_IF_ERROR(dump_kernels(plan_, options_.dump_kernels));
  plan_.compile_ms = compile_counters().compile_ms - compiled_before_.compile_ms;
  return plan_.steps;
}

std::map<int, Backend::GroupMeasurement> CudaBackend::measurements() const {
  std::map<int, GroupMeasurement> out;
  for (const auto& [id, rs] : plan_.group_registers) out[id] = {rs.first, rs.second};
  return out;
}

void CudaBackend::fill_stats(SessionStats* stats) const {
  stats->generated_kernels = static_cast<int64_t>(plan_.kernels.size());
  stats->library_calls = 0;
  stats->host_fallback_steps = 0;
  for (const DeviceStep& d : plan_.dsteps) {
    stats->library_calls += d.library_calls;
    stats->host_fallback_steps += d.host ? 1 : 0;
  }
  stats->compile_ms = plan_.compile_ms;
  stats->device_name = device_ ? device_->device_name() : std::string();
}

Status CudaBackend::prepare(const Graph& g, const ExecutionPlan& plan) {
  if (executor_) return Status();
  FUSERT_RETURN_IF_ERROR(check_cuda_device());
  ExecutorOptions eo;
  eo.cuda_graph = options_.cuda_graph;
  eo.tf32 = options_.tf32;
  FUSERT_ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> device, CudaDevice::create(g, plan_, plan, eo));
  device_ = device.get();
  executor_ = std::make_unique<ExecutorCore>(g, plan, std::move(device));
  return Status();
}

Result<TensorMap> CudaBackend::run(const TensorMap& inputs, RunInfo* info) const {
  if (!executor_) return error(StatusCode::kDeviceError) << "--device cuda: the session has no device (plan only)";
  return executor_->run(inputs, nullptr, info);  // one context: concurrent runs take turns
}

std::string CudaBackend::report(const Graph& g) const {
  (void)g;
  std::ostringstream os;
  const CudaPlan& p = plan_;
  int launches = 0, host = 0, lib = 0;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const DeviceStep& d = p.dsteps[i];
    if (p.steps[i].alias_of != kNoValue) continue;
    launches += d.host ? 0 : static_cast<int>(d.kernels.size()) + d.library_calls + d.copy_launches;
    host += d.host ? 1 : 0;
    lib += d.library_calls;
  }
  int copies = 0;
  for (const DeviceStep& d : p.dsteps) copies += d.host ? 0 : d.copy_launches;
  const std::string cache = kernel_cache_dir();
  os << "cuda plan (" << kTargetArch << "): " << launches << " launch" << (launches == 1 ? "" : "es")
     << " per inference (" << lib << " cuDNN/cuBLASLt, " << launches - lib - copies << " generated, " << copies
     << " copies), " << p.kernels.size() << " distinct generated kernel" << (p.kernels.size() == 1 ? "" : "s") << ", "
     << host << " host-fallback step" << (host == 1 ? "" : "s") << "; NVRTC+nvJitLink " << p.compile_ms
     << " ms this load (kernel cache: " << cache_state(cache) << ")\n";
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const Step& s = p.steps[i];
    const DeviceStep& d = p.dsteps[i];
    if (s.alias_of != kNoValue) continue;
    os << "  " << s.name << ": ";
    if (d.host) {
      os << "host fallback (" << d.host_reason << ")\n";
      continue;
    }
    bool first = true;
    if (d.library_calls) {
      os << d.library_calls << " library call" << (d.library_calls > 1 ? "s" : "");
      first = false;
    }
    for (int k : d.kernels) {
      const GeneratedKernel& gk = p.kernels[static_cast<size_t>(k)];
      os << (first ? "" : " + ") << gk.src.entry << " [" << gk.bin.registers << " regs, " << gk.bin.spill_bytes()
         << " spill bytes]";
      first = false;
    }
    if (d.copy_launches)
      os << (first ? "" : " + ") << d.copy_launches << " copy launch" << (d.copy_launches > 1 ? "es" : "");
    os << "\n";
  }
  return os.str();
}

}  // namespace fusert::cuda

namespace fusert {

namespace {

// The options the CUDA backend reads besides its own (SessionOptions' CUDA block): the CPU kernel
// set of its host-fallback steps, and the precision (f32 only for now).
Status check_cuda_options(const SessionOptions& options) {
  CpuKernels kernels;
  FUSERT_RETURN_IF_ERROR(check_cpu_kernels(options, &kernels));
  if (options.precision == "f32") return Status();
  if (options.precision != "bf16")
    return error(StatusCode::kInvalidArgument) << "precision: expected f32 or bf16, got '" << options.precision << "'";
  return error(StatusCode::kUnsupported) << "precision bf16 runs on the CPU backend only (device '" << options.device
                                         << "' runs f32; CUDA fp16/bf16 is not built yet)";
}

std::unique_ptr<Backend> make_cuda_backend(const SessionOptions& options) {
  return std::make_unique<cuda::CudaBackend>(options);
}

}  // namespace

// The planner's machine: runtime/cuda/cuda_roofline.h.
const BackendInfo& cuda_backend_info() {
  static const BackendInfo info{"cuda", "NVIDIA GPU: cuDNN, cuBLASLt and NVRTC-generated fused kernels",
                                cuda::kCudaRoofline, check_cuda_options, make_cuda_backend};
  return info;
}

}  // namespace fusert
