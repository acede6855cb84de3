// Dims of a run's inputs and the per-shape plan cache (runtime/shape_cache.h).
#include "runtime/shape_cache.h"

namespace fusert {

std::string dims_str(const DimValues& v) {
  std::string s;
  for (const auto& [name, value] : v) s += (s.empty() ? "" : ", ") + name + " = " + std::to_string(value);
  return s;
}

Result<DimValues> bind_dims(const ModelSpec& spec, const TensorMap& inputs, bool allow_zero) {
  const Graph& g = spec.graph;
  DimValues out;
  std::map<std::string, std::string> first_seen;  // dim -> "input 'x' dim 1"
  for (size_t k = 0; k < g.inputs.size(); ++k) {
    const Value& v = g.value(g.inputs[k]);
    auto it = inputs.find(v.name);
    if (it == inputs.end()) return error(StatusCode::kInvalidArgument) << "missing input '" << v.name << "'";
    const Shape& s = it->second.shape();
    const std::vector<std::string> fixed(v.shape.size());  // a model of static shapes keeps no symbols
    const std::vector<std::string>& syms = k < spec.input_dims.size() ? spec.input_dims[k] : fixed;
    auto expected = [&] {
      std::string e = "[";
      for (size_t d = 0; d < syms.size(); ++d)
        e += (d ? ", " : "") + (syms[d].empty() ? std::to_string(v.shape[d]) : syms[d]);
      return e + "]";
    };
    if (s.size() != syms.size()) {
      return error(StatusCode::kShapeMismatch) << "input '" << v.name << "': expected shape " << expected() << ", got "
                                               << shape_str(s) << " (rank " << s.size() << ")";
    }
    for (size_t d = 0; d < s.size(); ++d) {
      const std::string where = "input '" + v.name + "' dim " + std::to_string(d);
      if (syms[d].empty()) {
        if (s[d] != v.shape[d]) {
          return error(StatusCode::kShapeMismatch) << where << " is " << s[d] << " but the model fixes it to "
                                                   << v.shape[d] << " (expected shape " << expected() << ")";
        }
        continue;
      }
      const std::string& name = syms[d];
      const SymbolicDim* sd = nullptr;
      for (const SymbolicDim& x : spec.dims) sd = x.name == name ? &x : sd;
      if (!sd) return error(StatusCode::kInternal) << where << ": dim '" << name << "' is not declared";
      if (sd->open && s[d] == 0 && allow_zero) {
        // an empty input: bound at 0 (only the shapes that follow are computed)
      } else if (sd->open && s[d] < sd->min) {
        return error(StatusCode::kShapeMismatch)
               << where << " ('" << name << "') is " << s[d]
               << "; a dim the model leaves open takes 1 or more (an empty input is served only where every output "
                  "is empty)";
      }
      if ((s[d] < sd->min && !(sd->open && s[d] == 0 && allow_zero)) || s[d] > sd->max) {
        return error(StatusCode::kShapeMismatch) << where << " ('" << name << "') is " << s[d] << ", outside the range "
                                                 << sd->min << ".." << sd->max << " that " << spec.path << " declares";
      }
      auto [pos, fresh] = out.emplace(name, s[d]);
      if (!fresh && pos->second != s[d]) {
        return error(StatusCode::kShapeMismatch) << where << " ('" << name << "') is " << s[d] << " but "
                                                 << first_seen[name] << " gives '" << name << "' = " << pos->second;
      }
      if (fresh) first_seen[name] = where;
    }
  }
  return out;
}

Result<std::shared_ptr<ShapeInstance>> ShapeCache::get(const DimValues& dims, const Builder& build, bool* hit) {
  auto lookup = [&]() -> std::shared_ptr<ShapeInstance> {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if ((*it)->dims != dims) continue;
      std::shared_ptr<ShapeInstance> inst = *it;
      lru_.splice(lru_.begin(), lru_, it);
      return inst;
    }
    return nullptr;
  };
  if (auto inst = lookup()) {
    *hit = true;
    return inst;
  }
  std::lock_guard<std::mutex> building(build_mu_);
  if (auto inst = lookup()) {  // built by a concurrent miss meanwhile
    *hit = true;
    return inst;
  }
  *hit = false;
  FUSERT_ASSIGN_OR_RETURN(std::shared_ptr<ShapeInstance> inst, build(dims));
  std::lock_guard<std::mutex> lock(mu_);
  lru_.push_front(inst);
  while (lru_.size() > capacity_) lru_.pop_back();
  return inst;
}

size_t ShapeCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace fusert
