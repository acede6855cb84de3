// The registry of kernel specs (kernel_spec.h). Entries are never removed or replaced, and
// std::map nodes never move, so a pointer from find_kernel_spec stays valid for the life of the
// process and may be read without the lock.
#include "kernels/cuda/kernel_spec.h"

#include <map>
#include <mutex>

namespace fusert::cuda {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, KernelSpec> specs;
};

// Leaked on purpose: launches from static destructors (a plan freed at exit) still find it.
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

}  // namespace

void register_kernel_spec(const std::string& entry, KernelSpec spec) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.specs.try_emplace(entry, std::move(spec));  // a second registration of an entry is ignored
}

const KernelSpec* find_kernel_spec(const std::string& entry) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.specs.find(entry);
  return it == r.specs.end() ? nullptr : &it->second;
}

}  // namespace fusert::cuda
