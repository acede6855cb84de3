// The host references of generated kernels (kernel_reference.h), built on first use from the spec
// the code generator recorded (kernels/cuda/kernel_spec.h). Entries are never removed or
// replaced, and std::map nodes never move, so a pointer from find_kernel_reference stays valid
// for the life of the process and may be called without the lock.
#include "tests/cuda_oracle/kernel_reference.h"

#include <map>
#include <mutex>
#include <type_traits>

#include "kernels/cuda/kernel_spec.h"
#include "tests/cuda_oracle/kernel_reference_internal.h"

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

KernelReference build(const KernelSpec& spec) {
  return std::visit(
      [](const auto& s) -> KernelReference {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same_v<T, kern::ElementwiseProgram>) return detail::elementwise_reference(s);
        if constexpr (std::is_same_v<T, std::vector<kern::ElementwiseProgram>>)
          return detail::elementwise_multi_reference(s);
        if constexpr (std::is_same_v<T, RowNormSpec>) return detail::row_norm_reference(s);
        if constexpr (std::is_same_v<T, PoolSpec>) return detail::pool_reference(s);
        if constexpr (std::is_same_v<T, AttentionSpec>) return detail::attention_reference(s);
      },
      spec);
}

}  // namespace

const KernelReference* find_kernel_reference(const std::string& entry) {
  Registry& r = registry();
  const std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.refs.find(entry);
  if (it != r.refs.end()) return &it->second;
  const KernelSpec* spec = find_kernel_spec(entry);
  if (!spec) return nullptr;
  return &r.refs.emplace(entry, build(*spec)).first->second;
}

}  // namespace fusert::cuda
