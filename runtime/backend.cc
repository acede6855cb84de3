// The backend registry: which backends this build includes and how the session gets one.
#include "runtime/backend.h"

#include "kernels/cpu/onednn.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert {

// Each backend's factory lives beside its implementation (runtime/cpu/cpu_backend.cc,
// runtime/cuda/cuda_backend.cc); this is the one place that knows which are built in.
std::unique_ptr<Backend> make_cpu_backend(const SessionOptions& options);
#ifdef FUSERT_HAVE_CUDA
std::unique_ptr<Backend> make_cuda_backend(const SessionOptions& options);
#endif

namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Backend> (*make)(const SessionOptions&);
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries = {
      {"cpu", make_cpu_backend},
#ifdef FUSERT_HAVE_CUDA
      {"cuda", make_cuda_backend},
#endif
  };
  return entries;
}

// SessionOptions::precision: "f32", or "bf16" on the CPU's oneDNN anchors where the CPU runs
// bf16 natively.
Status check_precision(const SessionOptions& options, CpuKernels kernels) {
  if (options.precision == "f32") return Status();
  if (options.precision != "bf16")
    return error(StatusCode::kInvalidArgument) << "precision: expected f32 or bf16, got '" << options.precision << "'";
  if (options.device != "cpu")
    return error(StatusCode::kUnsupported) << "precision bf16 runs on the CPU backend only (device '" << options.device
                                           << "' runs f32; CUDA fp16/bf16 is not built yet)";
  if (kernels != CpuKernels::kOneDnn)
    return error(StatusCode::kInvalidArgument)
           << "precision bf16 needs the oneDNN kernels (cpu_kernels onednn); the reference kernels are f32 only";
  if (!cpu::onednn::built())
    return error(StatusCode::kUnsupported) << "precision bf16 needs oneDNN, which this build does not link";
  if (!cpu::onednn::bf16_native())
    return error(StatusCode::kUnsupported)
           << "precision bf16: this CPU has no native bf16 arithmetic (AVX512_BF16 or AMX, as oneDNN sees it; "
              "ONEDNN_MAX_CPU_ISA may lower it); run in f32";
  return Status();
}

}  // namespace

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const Entry& e : registry()) names.push_back(e.name);
  return names;
}

Result<std::unique_ptr<Backend>> create_backend(const SessionOptions& options) {
  CpuKernels kernels;
  if (!parse_cpu_kernels(options.cpu_kernels, &kernels)) {
    return error(StatusCode::kInvalidArgument)
           << "cpu kernels: expected onednn or reference, got '" << options.cpu_kernels << "'";
  }
  FUSERT_RETURN_IF_ERROR(check_precision(options, kernels));
  for (const Entry& e : registry()) {
    if (options.device == e.name) return e.make(options);
  }
  if (options.device == "cuda") return check_cuda_device();  // a build without the CUDA backend says so
  return error(StatusCode::kInvalidArgument) << "unknown device '" << options.device << "' (cpu, cuda)";
}

}  // namespace fusert
