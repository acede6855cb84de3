// The CPU executor: arena-backed buffer table and the step loop.
#include "runtime/executor.h"

#include <chrono>
#include <cstring>

#include "kernels/cpu/cpu_kernels.h"

namespace fusert {

namespace {

class ArenaTable : public BufferTable {
 public:
  ArenaTable(const Graph& g, const ExecutionPlan& p, uint8_t* arena) : g_(g), p_(p), arena_(arena) {}
  void* raw(ValueId id) const override {
    ValueId root = p_.slots[static_cast<size_t>(id)].root;
    const Value& v = g_.value(root == kNoValue ? id : root);
    if (v.is_initializer) return const_cast<void*>(v.data.raw());
    return arena_ + p_.slots[static_cast<size_t>(id)].offset;
  }
  float* f32(ValueId id) const override { return static_cast<float*>(raw(id)); }

 private:
  const Graph& g_;
  const ExecutionPlan& p_;
  uint8_t* arena_;
};

}  // namespace

struct Executor::Context {
  Tensor arena;
};

Executor::Executor(const Graph& g, const ExecutionPlan& plan, int threads) : g_(g), plan_(plan), threads_(threads) {}
Executor::~Executor() = default;

std::unique_ptr<Executor::Context> Executor::acquire() const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<Context> c = std::move(free_.back());
      free_.pop_back();
      return c;
    }
    ++created_;
  }
  auto c = std::make_unique<Context>();
  c->arena = Tensor(DType::kF32, Shape{static_cast<int64_t>((plan_.arena_bytes + 3) / 4)});
  return c;
}

void Executor::release(std::unique_ptr<Context> c) const {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(std::move(c));
}

size_t Executor::contexts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return created_;
}

Status check_inputs(const Graph& g, const std::map<std::string, Tensor>& inputs) {
  for (ValueId id : g.inputs) {
    const Value& v = g.value(id);
    auto it = inputs.find(v.name);
    if (it == inputs.end())
      return error(StatusCode::kInvalidArgument) << "missing input '" << v.name << "' " << shape_str(v.shape);
    const Tensor& t = it->second;
    if (t.dtype() != v.dtype) {
      return error(StatusCode::kInvalidArgument)
             << "input '" << v.name << "': expected dtype " << dtype_name(v.dtype) << ", got " << dtype_name(t.dtype());
    }
    if (t.shape() != v.shape) {
      return error(StatusCode::kShapeMismatch)
             << "input '" << v.name << "': expected shape " << shape_str(v.shape) << ", got " << shape_str(t.shape());
    }
  }
  for (const auto& kv : inputs) {
    ValueId id = g.find_value(kv.first);
    if (id == kNoValue || !g.value(id).is_graph_input)
      return error(StatusCode::kInvalidArgument) << "'" << kv.first << "' is not an input of model '" << g.name << "'";
  }
  return Status();
}

Result<std::map<std::string, Tensor>> Executor::run(const std::map<std::string, Tensor>& inputs,
                                                    std::vector<double>* step_ms) const {
  FUSERT_RETURN_IF_ERROR(check_inputs(g_, inputs));
  cpu::ThreadScope threads(threads_);
  std::unique_ptr<Context> ctx = acquire();
  struct Release {  // the context goes back to the pool on every path out
    const Executor* ex;
    std::unique_ptr<Context>* c;
    ~Release() { ex->release(std::move(*c)); }
  } release{this, &ctx};
  ArenaTable table(g_, plan_, static_cast<uint8_t*>(ctx->arena.raw()));
  for (ValueId id : g_.inputs) {
    const Tensor& t = inputs.at(g_.value(id).name);
    std::memcpy(table.raw(id), t.raw(), t.nbytes());
  }
  if (step_ms) step_ms->assign(plan_.steps.size(), 0.0);
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    const Step& step = plan_.steps[i];
    if (step.check) FUSERT_RETURN_IF_ERROR(step.check(table));
    if (step.run) step.run(table);
    if (step_ms)
      (*step_ms)[i] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  }
  std::map<std::string, Tensor> out;
  for (ValueId id : g_.outputs) {
    const Value& v = g_.value(id);
    Tensor t(v.dtype, v.shape);
    std::memcpy(t.raw(), table.raw(id), t.nbytes());
    out.emplace(v.name, std::move(t));
  }
  return out;
}

}  // namespace fusert
