// The backend registry: which backends this build includes and how the session gets one.
#include "runtime/backend.h"

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
  for (const Entry& e : registry()) {
    if (options.device == e.name) return e.make(options);
  }
  if (options.device == "cuda") return check_cuda_device();  // a build without the CUDA backend says so
  return error(StatusCode::kInvalidArgument) << "unknown device '" << options.device << "' (cpu, cuda)";
}

}  // namespace fusert
