// The registry of host references (kernel_reference.h). Entries are never removed or replaced,
// and std::map nodes never move, so a pointer from find_kernel_reference stays valid for the
// life of the process and may be called without the lock.
#include "kernels/cuda/kernel_reference.h"

#include <map>
#include <mutex>

namespace fusert::cuda {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, KernelReference> refs;
};

// Leaked on purpose: launches from static destructors (a plan freed at exit) still find it.
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

}  // namespace

void register_kernel_reference(const std::string& entry, KernelReference fn) {
  if (!fn) return;
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.refs.try_emplace(entry, std::move(fn));  // a second registration of an entry is ignored
}

const KernelReference* find_kernel_reference(const std::string& entry) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.refs.find(entry);
  return it == r.refs.end() ? nullptr : &it->second;
}

}  // namespace fusert::cuda
