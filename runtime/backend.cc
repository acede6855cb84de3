// The backend registry: which backends this build includes, which ones an application added,
// and how the session gets one.
#include "runtime/backend.h"

#include "fusert/fusert.h"
#include "runtime/cuda/cuda_roofline.h"

#include <deque>
#include <mutex>

namespace fusert {

// Each built-in backend's entry lives beside its implementation (runtime/cpu/cpu_backend.cc,
// runtime/cuda/cuda_backend.cc); this list is the one place that knows which are built in.
const BackendInfo& cpu_backend_info();
#ifdef FUSERT_HAVE_CUDA
const BackendInfo& cuda_backend_info();
#endif

namespace {

struct Registry {
  std::mutex mu;
  std::deque<BackendInfo> entries;  // a deque: find_backend's pointers stay valid as it grows
};

Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    reg->entries.push_back(cpu_backend_info());
#ifdef FUSERT_HAVE_CUDA
    reg->entries.push_back(cuda_backend_info());
#endif
    return reg;
  }();
  return *r;
}

}  // namespace

Status register_backend(const BackendInfo& info) {
  if (info.name.empty()) return error(StatusCode::kInvalidArgument) << "register_backend: the backend has no name";
  if (!info.make)
    return error(StatusCode::kInvalidArgument) << "register_backend: backend '" << info.name << "' has no factory";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const BackendInfo& e : r.entries) {
    if (e.name == info.name)
      return error(StatusCode::kInvalidArgument)
             << "register_backend: a backend named '" << info.name << "' is registered already";
  }
  r.entries.push_back(info);
  return Status();
}

const BackendInfo* find_backend(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const BackendInfo& e : r.entries) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::vector<std::string> backend_names() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const BackendInfo& e : r.entries) names.push_back(e.name);
  return names;
}

std::vector<std::string> devices() { return backend_names(); }

std::string backend_list() {
  std::string s;
  for (const std::string& n : backend_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string backend_choices() {
  const std::vector<std::string> names = backend_names();
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

bool planner_roofline(const std::string& name, Roofline* r) {
  if (const BackendInfo* info = find_backend(name)) {
    *r = info->roofline;
    return true;
  }
  if (name != "cuda") return false;
  *r = cuda::kCudaRoofline;  // a build without the CUDA backend still plans for it (plan_for)
  return true;
}

Status set_planner_backend(const std::string& name, FusionOptions* o) {
  Roofline r;
  if (!planner_roofline(name, &r))
    return error(StatusCode::kInvalidArgument) << "unknown backend '" << name << "' (" << backend_list() << ")";
  o->backend = name;
  o->roofline = r;
  return Status();
}

Status configure_planner(Backend& b, const SessionOptions& options, FusionOptions* o) {
  FUSERT_RETURN_IF_ERROR(set_planner_backend(b.name(), o));
  b.configure_planner(o, true);
  return options.plan_for.empty() ? Status() : set_planner_backend(options.plan_for, o);
}

Result<std::unique_ptr<Backend>> create_backend(const SessionOptions& options) {
  const BackendInfo* info = find_backend(options.device);
  if (!info) {
    if (options.device == "cuda") return check_cuda_device();  // a build without the CUDA backend says so
    return error(StatusCode::kInvalidArgument)
           << "unknown device '" << options.device << "' (" << backend_list() << ")";
  }
  if (info->check_options) FUSERT_RETURN_IF_ERROR(info->check_options(options));
  return info->make(options);
}

}  // namespace fusert
