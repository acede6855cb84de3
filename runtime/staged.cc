// Execution stages of a model with data-dependent output shapes (runtime/staged.h).
#include "runtime/staged.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <set>

#include "graph/fusion/explain.h"
#include "graph/fusion/planner.h"
#include "runtime/session_impl.h"
#include "runtime/staged_internal.h"

namespace fusert {

bool has_stages(const ModelSpec& spec) {
  for (const SymbolicDim& d : spec.dims)
    if (d.data_dependent) return true;
  for (const Node& n : spec.graph.nodes)
    if (n.op == OpKind::kIf || n.op == OpKind::kLoop) return true;
  return false;
}

namespace {

// Stage `s` of `full` as a model of its own: its dims are the input dims and the counts of the
// data-dependent ops before it; expanded at other dims (`base`: the model as loaded; null for a
// stage cut from an expansion, which is not expanded again) it is the model expanded, cut again.
Result<ModelSpec> stage_spec(const ModelSpec& full, const std::shared_ptr<const ModelSpec>& base,
                             const std::shared_ptr<const CountConstants>& consts, int s) {
  const Stages st = split_stages(full.graph, *consts);
  ModelSpec spec;
  spec.graph = cut_stage(full.graph, st, s);
  spec.path = full.path;
  spec.base_dir = full.base_dir;
  std::set<std::string> before;  // counts of the data-dependent ops that run before stage s
  for (int i : st.dd_nodes)
    if (st.node_stage[static_cast<size_t>(i)] < s)
      for (const std::string& d : dd_dim_names(full.graph, full.graph.nodes[static_cast<size_t>(i)])) before.insert(d);
  for (const SymbolicDim& d : full.dims) {
    if (d.data_dependent && !before.count(d.name)) continue;
    spec.dims.push_back(d);
    spec.dim_values[d.name] = full.dim_values.at(d.name);
  }
  for (ValueId in : spec.graph.inputs) spec.input_dims.emplace_back(spec.graph.value(in).shape.size());
  if (spec.dims.empty() || !base) return spec;
  spec.expand_at = [base, consts, s](const DimValues& v) -> Result<ModelSpec> {
    DimValues all = base->dim_values;
    for (const auto& [k, x] : v) all[k] = x;
    FUSERT_ASSIGN_OR_RETURN(ModelSpec m, instantiate_model(*base, all));
    return stage_spec(m, nullptr, consts, s);
  };
  return spec;
}

// The constants of `full` folded from a count (a Shape of a data-dependent output, arithmetic on
// it): those the import traced (ModelSpec::count_constants), and those that differ when the model
// is expanded with only that count moved (or with the counts planned at its value, where they
// must agree).
Result<CountConstants> count_constants(const ModelSpec& full) {
  CountConstants out;
  for (const auto& [name, dims] : full.count_constants) {  // what the import traced
    const ValueId v = full.graph.find_value(name);
    if (v != kNoValue) out[v] = dims;
  }
  for (const SymbolicDim& d : full.dims) {
    if (!d.data_dependent) continue;
    DimValues at = full.dim_values;
    const int64_t now = at[d.name];
    at[d.name] = now == d.probe || d.probe < 1 ? now + 1 : d.probe;
    std::vector<std::string> moving = {d.name};
    Result<ModelSpec> moved = instantiate_model(full, at);
    if (!moved.ok()) {  // counts that must agree (x[s:e] + w[s:e]): those planned alike move together
      for (const SymbolicDim& e : full.dims) {
        if (!e.data_dependent || e.name == d.name || full.dim_values.at(e.name) != now) continue;
        at[e.name] = at[d.name];
        moving.push_back(e.name);
      }
      if (moving.size() > 1) moved = instantiate_model(full, at);
    }
    // No valid shapes there either (a Reshape's computed dim meets a constant [4]): the count
    // takes no other value than planned, which a run at another one reports, naming the node.
    if (!moved.ok()) continue;
    for (size_t i = 0; i < full.graph.values.size(); ++i) {
      const Value& v = full.graph.values[i];
      const Tensor& w = moved->graph.values[i].data;
      if (!v.is_constant || v.data.empty()) continue;
      if (w.dtype() != v.data.dtype() || w.shape() != v.data.shape() ||
          std::memcmp(w.raw(), v.data.raw(), v.data.nbytes()) != 0)
        for (const std::string& m : moving) out[static_cast<ValueId>(i)].push_back(m);
    }
  }
  return out;
}

// The constants of `full` that follow an input dim (the model expanded with that dim moved
// gives another value; e.g. a Loop's trip count folded from a Shape) or a count (`consts`); and
// into `nodes` the stage boundaries whose attributes do (a subgraph reading such a constant).
Result<std::set<ValueId>> constants_following_dims(const ModelSpec& full, const CountConstants& consts,
                                                   std::set<std::string>* nodes) {
  std::set<ValueId> out;
  for (const auto& [v, counts] : consts) out.insert(v);
  for (const SymbolicDim& d : full.dims) {
    if (d.data_dependent) continue;
    DimValues at = full.dim_values;
    const int64_t now = at[d.name];
    at[d.name] = d.probe > 0 && d.probe != now ? d.probe : now + 1 <= d.max ? now + 1 : now - 1;
    if (at[d.name] < std::max<int64_t>(1, d.min) || at[d.name] == now) continue;
    Result<ModelSpec> moved = instantiate_model(full, at);
    if (!moved.ok()) continue;  // the stages' own expansion reports a size the model refuses
    for (size_t i = 0; i < full.graph.values.size() && i < moved->graph.values.size(); ++i) {
      const Value& v = full.graph.values[i];
      const Tensor& w = moved->graph.values[i].data;
      if (!v.is_constant || v.data.empty()) continue;
      if (w.dtype() != v.data.dtype() || w.shape() != v.data.shape() ||
          std::memcmp(w.raw(), v.data.raw(), v.data.nbytes()) != 0)
        out.insert(static_cast<ValueId>(i));
    }
    for (size_t i = 0; i < full.graph.nodes.size() && i < moved->graph.nodes.size(); ++i) {
      const Node& n = full.graph.nodes[i];
      if (!is_stage_boundary(full.graph, n)) continue;
      for (const auto& [k, a] : n.attrs) {
        auto it = moved->graph.nodes[i].attrs.find(k);
        if (it != moved->graph.nodes[i].attrs.end() && (it->second.s != a.s || it->second.ints != a.ints))
          nodes->insert(n.name);
      }
    }
  }
  return out;
}

}  // namespace

StagedModel::~StagedModel() = default;

const SessionImpl& StagedModel::stage(int s) const { return *stages_[static_cast<size_t>(s)]->session; }

bool StagedModel::has_session(int s) const { return stages_[static_cast<size_t>(s)]->session != nullptr; }

Result<std::unique_ptr<StagedModel>> StagedModel::build(const ModelSpec& full, const SessionOptions& options) {
  std::unique_ptr<StagedModel> m(new StagedModel());
  const Graph& g = full.graph;
  FUSERT_ASSIGN_OR_RETURN(CountConstants counted, count_constants(full));
  auto consts = std::make_shared<const CountConstants>(std::move(counted));
  const Stages st = split_stages(g, *consts);
  if (!st.settled) {
    return error(StatusCode::kUnsupported) << full.path << ": a data-dependent count is read before the op that "
                                           << "returns it; fusert finds no order of execution stages";
  }
  FusionOptions fopt;
  std::string why;
  parse_fusion_mode(options.fusion, &fopt, &why);  // checked by the caller
  auto base = std::make_shared<const ModelSpec>(full);
  for (int s = 0; s < st.count; ++s) {
    auto stage = std::make_unique<Stage>();
    stage->index = s;
    FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, stage_spec(full, base, consts, s));
    for (ValueId v : spec.graph.inputs) stage->inputs.push_back(spec.graph.value(v).name);
    for (ValueId v : spec.graph.outputs) stage->outputs.push_back(spec.graph.value(v).name);
    for (const SymbolicDim& d : spec.dims) stage->counts.push_back(d.name);
    for (ValueId v = 0; v < static_cast<ValueId>(spec.graph.values.size()); ++v) {
      const ValueId f = g.find_value(spec.graph.value(v).name);
      if (f != kNoValue && consts->count(f)) stage->count_constants[spec.graph.value(v).name] = consts->at(f);
    }
    if (!spec.graph.nodes.empty()) {
      SessionOptions o = options;
      o.profile_guided &= s == 0;  // a later stage's inputs come from the ops before it: no seeded run
      Result<std::unique_ptr<SessionImpl>> sess = SessionImpl::from_spec(std::move(spec), o, fopt, 0, true);
      if (!sess.ok()) return error(sess.status().code()) << stage_str(s, st.count) << ": " << sess.status().message();
      stage->session = std::move(*sess);
    }
    m->stages_.push_back(std::move(stage));
  }
  std::set<std::string> moving_nodes;
  FUSERT_ASSIGN_OR_RETURN(const std::set<ValueId> moving, constants_following_dims(full, *consts, &moving_nodes));
  for (int i : st.dd_nodes) {
    auto op = std::make_unique<DDOp>();
    op->node = g.nodes[static_cast<size_t>(i)];
    op->after = st.node_stage[static_cast<size_t>(i)];
    op->node_follows = moving_nodes.count(op->node.name) > 0;
    if (is_data_dependent(g, op->node)) op->dims = dd_dim_names(g, op->node);
    op->label = std::string(op_name(op->node.op)) + " '" + op->node.name + "'";
    for (ValueId in : op->node.inputs) {
      op->in.push_back(in == kNoValue ? std::string() : g.value(in).name);
      op->fixed.push_back(in != kNoValue && !g.value(in).data.empty() ? g.value(in).data : Tensor());
      op->follows.push_back(in != kNoValue && moving.count(in) > 0);
    }
    for (ValueId o : op->node.outputs) op->out.push_back(g.value(o).name);
    m->dd_.push_back(std::move(op));
  }
  for (ValueId o : g.outputs) m->outputs_.push_back(g.value(o).name);
  m->options_ = options;
  m->path_ = full.path;
  m->full_ = base;
  return m;
}

Result<StagedModel::DDOp> StagedModel::op_at(const DDOp& op, const DimValues& dims) const {
  DimValues key = full_->dim_values;
  for (const auto& [k, v] : dims) key[k] = v;
  std::shared_ptr<const Graph> g;
  {
    std::lock_guard<std::mutex> lock(consts_mu_);
    auto it = graphs_at_.find(key);
    if (it != graphs_at_.end()) g = it->second;
  }
  if (!g) {
    FUSERT_ASSIGN_OR_RETURN(ModelSpec at, instantiate_model(*full_, key));
    g = std::make_shared<const Graph>(std::move(at.graph));
    std::lock_guard<std::mutex> lock(consts_mu_);
    if (graphs_at_.size() >= 16) graphs_at_.clear();  // bounded, as the shape caches
    graphs_at_[key] = g;
  }
  DDOp moved = op;
  for (size_t k = 0; k < op.in.size(); ++k) {
    if (!op.follows[k]) continue;
    const ValueId v = g->find_value(op.in[k]);
    if (v == kNoValue || g->value(v).data.empty())
      return error(StatusCode::kInternal) << op.label << ": constant '" << op.in[k] << "' not found at other dims";
    moved.fixed[k] = g->value(v).data;
    moved.follows[k] = false;
  }
  if (op.node_follows) {
    for (const Node& n : g->nodes)
      if (n.name == op.node.name) moved.node = n;
  }
  return moved;
}

Result<TensorMap> StagedModel::run(const DimValues& input_dims, const TensorMap& inputs) const {
  TensorMap env = inputs;
  DimValues dims = input_dims;
  for (const auto& stage : stages_) {
    FUSERT_ASSIGN_OR_RETURN(TensorMap out, run_stage(*stage, dims, env));
    for (auto& [k, t] : out) env[k] = std::move(t);
    for (const auto& op : dd_) {
      if (op->after != stage->index) continue;
      const DDOp* use = op.get();
      DDOp moved;
      if (op->node_follows || std::find(op->follows.begin(), op->follows.end(), true) != op->follows.end()) {
        FUSERT_ASSIGN_OR_RETURN(moved, op_at(*op, dims));
        use = &moved;
      }
      FUSERT_ASSIGN_OR_RETURN(std::vector<Tensor> res, run_dd(*use, env, &dims));
      for (size_t k = 0; k < res.size() && k < op->out.size(); ++k) env[op->out[k]] = std::move(res[k]);
    }
  }
  TensorMap out;
  for (const std::string& name : outputs_) {
    auto it = env.find(name);
    if (it == env.end()) return error(StatusCode::kInternal) << "staged run: output '" << name << "' not computed";
    out[name] = it->second;
  }
  return out;
}

Result<std::vector<StepTime>> StagedModel::profile(const DimValues& input_dims, const TensorMap& inputs,
                                                   int runs) const {
  TensorMap env = inputs;
  DimValues dims = input_dims;
  std::vector<StepTime> all;
  for (const auto& stage : stages_) {
    if (stage->session) {
      DimValues at;
      for (const std::string& d : stage->counts) at[d] = dims.at(d);
      TensorMap in;
      for (const std::string& name : stage->inputs) in[name] = env.at(name);
      bool empty = false;
      for (const auto& [d, v] : at) empty |= v == 0;
      if (!empty) {
        FUSERT_ASSIGN_OR_RETURN(std::vector<StepTime> steps, stage->session->profile_at(&at, in, runs));
        for (StepTime& t : steps) {
          if (stage->index > 0) t.name = "stage " + std::to_string(stage->index + 1) + ": " + t.name;
          all.push_back(std::move(t));
        }
      }
    }
    FUSERT_ASSIGN_OR_RETURN(TensorMap out, run_stage(*stage, dims, env));
    for (auto& [k, t] : out) env[k] = std::move(t);
    for (const auto& op : dd_) {
      if (op->after != stage->index) continue;
      const DDOp* use = op.get();
      DDOp moved;
      if (op->node_follows || std::find(op->follows.begin(), op->follows.end(), true) != op->follows.end()) {
        FUSERT_ASSIGN_OR_RETURN(moved, op_at(*op, dims));
        use = &moved;
      }
      std::vector<double> ms;
      std::vector<Tensor> res;
      for (int r = 0; r < std::max(1, runs); ++r) {
        auto t0 = std::chrono::steady_clock::now();
        FUSERT_ASSIGN_OR_RETURN(res, run_dd(*use, env, &dims));
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(ms.begin(), ms.end());
      StepTime t;
      t.name = op->node.name;
      t.kernel = "host";
      t.detail = op->label + " between stages";
      for (size_t k = 0; k < op->dims.size(); ++k)
        t.detail += (k ? ", " : ", count ") + op->dims[k] + " = " + std::to_string(dims.at(op->dims[k]));
      t.nodes = 1;
      t.ms = ms[ms.size() / 2];
      t.reference_loop = false;
      all.push_back(t);
      for (size_t k = 0; k < res.size() && k < op->out.size(); ++k) env[op->out[k]] = std::move(res[k]);
    }
  }
  return all;
}

std::string StagedModel::explain() const {
  std::string s =
      "Execution stages: " + std::to_string(stages_.size()) +
      " (the plan splits where an output's size depends on the data, or at an If or Loop decided at run time; each "
      "stage is planned and fused on its own, and shaped per run at the counts returned before it)\n";
  for (const auto& stage : stages_) {
    s += "\n== " + stage_str(stage->index, stage_count());
    if (!stage->session) {
      s += ": no nodes\n";
    } else {
      s += ": inputs";
      for (const std::string& n : stage->inputs) s += " '" + n + "'";
      s += "; dims";
      for (const std::string& d : stage->counts) s += " " + d;
      if (stage->counts.empty()) s += " none";
      s += "\n" + explain_plan(stage->session->graph(), stage->session->fusion_plan());
    }
    for (const auto& op : dd_) {
      if (op->after != stage->index) continue;
      s += "\n-- after " + stage_str(stage->index, stage_count()) + ", on the host: " + op->label + " -> ";
      for (size_t k = 0; k < op->out.size(); ++k) s += (k ? ", '" : "'") + op->out[k] + "'";
      if (op->node.op == OpKind::kIf)
        s += "; the branch the condition takes runs as a session of its own (per branch and shape)";
      if (op->node.op == OpKind::kLoop) s += "; its body runs once per iteration as a session of its own (per shape)";
      if (op->dims.size() == 1)
        s += std::string("; its ") + (op->node.op == OpKind::kLoop ? "iteration " : "") + "count is dim '" +
             op->dims[0] + "'";
      for (size_t k = 0; op->dims.size() > 1 && k < op->dims.size(); ++k)
        s += (k ? ", '" : "; its shape is dims '") + op->dims[k] + "'";
      s += "\n";
    }
  }
  return s;
}

std::string StagedModel::report() const {
  std::string s;
  for (const auto& stage : stages_) {
    if (!stage->session) continue;
    s += "== " + stage_str(stage->index, stage_count()) + "\n" + stage->session->backend_report();
  }
  return s;
}

void StagedModel::add_stats(SessionStats* into, bool load_figures) const {
  for (const auto& stage : stages_) {
    if (!stage->session) continue;
    const SessionStats& s = stage->session->stats();
    if (load_figures) {
      into->nodes += s.nodes;
      into->kernels += s.kernels;
      into->intermediate_bytes += s.intermediate_bytes;
      into->peak_activation_bytes = std::max(into->peak_activation_bytes, s.peak_activation_bytes);
      into->naive_activation_bytes += s.naive_activation_bytes;
      into->plan_ms += s.plan_ms;
      into->fusion_plan_ms += s.fusion_plan_ms;
      into->canonicalize_ms += s.canonicalize_ms;
      into->weight_bytes += s.weight_bytes;
      into->generated_kernels += s.generated_kernels;
      into->library_calls += s.library_calls;
      into->host_fallback_steps += s.host_fallback_steps;
      into->compile_ms += s.compile_ms;
      into->device_name = s.device_name;
      for (const std::string& l : s.pass_log)
        into->pass_log.push_back(stage_str(stage->index, stage_count()) + ": " + l);
    }
    into->shape_cache_hits += s.shape_cache_hits;
    into->shape_cache_misses += s.shape_cache_misses;
    into->shape_replans += s.shape_replans;
    into->shape_build_ms_max = std::max(into->shape_build_ms_max, s.shape_build_ms_max);
    into->shape_build_ms_total += s.shape_build_ms_total;
    if (s.shape_build_ms_last > 0) into->shape_build_ms_last = s.shape_build_ms_last;
  }
}

size_t StagedModel::execution_contexts() const {
  size_t n = 0;
  for (const auto& stage : stages_)
    if (stage->session) n = std::max(n, stage->session->execution_contexts());
  return n;
}

Status StagedModel::init_device() {
  for (const auto& stage : stages_)
    if (stage->session) FUSERT_RETURN_IF_ERROR(stage->session->init_device());
  return Status();
}

}  // namespace fusert
