// A stage of a staged model run where a count before it is 0 (runtime/staged.h): fusert computes
// no zero-size tensors, so the outputs that follow the empty values are served empty (their
// shapes from the model at that count, or between counts 1 and 2 where an op refuses 0) and the
// others are computed by a run at count 1 on stand-ins for the empty values, which they do not read.
#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "runtime/staged_internal.h"

namespace fusert {

namespace {

// Per output of `g`: whether it is computed from (or is) one of the inputs named in `empty`, or
// a constant folded from a count in `zero` (`consts`: name -> the counts it follows).
std::vector<bool> follows_empty(const Graph& g, const std::set<std::string>& empty,
                                const std::map<std::string, std::vector<std::string>>& consts,
                                const std::vector<std::string>& zero) {
  std::vector<char> tainted(g.values.size(), 0);
  for (ValueId in : g.inputs) tainted[static_cast<size_t>(in)] = empty.count(g.value(in).name) > 0;
  for (size_t v = 0; v < g.values.size(); ++v) {
    auto it = consts.find(g.values[v].name);
    for (size_t k = 0; it != consts.end() && k < it->second.size(); ++k)
      tainted[v] |= std::find(zero.begin(), zero.end(), it->second[k]) != zero.end();
  }
  for (const Node& n : g.nodes) {  // in topological order
    bool any = false;
    for (ValueId in : n.inputs) any |= in != kNoValue && tainted[static_cast<size_t>(in)];
    for (ValueId out : n.outputs)
      if (out != kNoValue) tainted[static_cast<size_t>(out)] |= any;
  }
  std::vector<bool> out;
  for (ValueId o : g.outputs) out.push_back(tainted[static_cast<size_t>(o)] != 0);
  return out;
}

// An input of one element per zero dim (zeros): it stands in for an empty value at count 1.
Tensor stand_in(const Tensor& t) {
  Shape s = t.shape();
  for (int64_t& d : s) d = std::max<int64_t>(d, 1);
  Tensor x(t.dtype(), s);
  std::memset(x.raw(), 0, x.nbytes());
  return x;
}

}  // namespace

// A stage at `dims`: its session at the counts bound so far; where a count is 0, as above.
Result<TensorMap> StagedModel::run_stage(const Stage& st, const DimValues& dims, const TensorMap& env) const {
  if (!st.session) return TensorMap{};
  DimValues at;
  std::vector<std::string> zero;
  for (const std::string& d : st.counts) {
    at[d] = dims.at(d);
    if (at[d] == 0) zero.push_back(d);
  }
  TensorMap in;
  std::set<std::string> empty;
  for (const std::string& name : st.inputs) {
    auto it = env.find(name);
    if (it == env.end()) return error(StatusCode::kInternal) << "staged run: stage input '" << name << "' missing";
    in[name] = it->second;
    if (it->second.numel() == 0) empty.insert(name);
  }
  if (zero.empty()) return st.session->run_at(at, in);
  FUSERT_ASSIGN_OR_RETURN(ZeroPlan plan, zero_plan(st, at, zero, empty));
  const Graph& g = st.session->graph();
  TensorMap out;
  for (size_t k = 0; k < st.outputs.size(); ++k)
    if (plan.follows[k]) out[st.outputs[k]] = Tensor(g.value(g.outputs[k]).dtype, plan.shapes[k]);
  if (std::find(plan.follows.begin(), plan.follows.end(), false) == plan.follows.end()) return out;
  DimValues one = at;
  for (const std::string& d : zero) one[d] = 1;
  for (const std::string& name : empty) in[name] = stand_in(in[name]);
  Result<TensorMap> res = st.session->run_at(one, in);
  if (!res.ok()) {
    return error(res.status().code()) << stage_str(st.index, stage_count()) << ": the count '" << zero[0]
                                      << "' is 0; its values that do not follow it, computed at count 1: "
                                      << res.status().message();
  }
  for (size_t k = 0; k < st.outputs.size(); ++k)
    if (!plan.follows[k]) out[st.outputs[k]] = res->at(st.outputs[k]);
  return out;
}

// Which outputs of stage `st` at `at` (the counts `zero` 0, the inputs `empty` empty) follow a
// zero count (read an empty value or a constant folded from the count, or change shape with
// it), and their shapes there, which must be empty (else the error naming the count); cached
// per dims.
Result<StagedModel::ZeroPlan> StagedModel::zero_plan(const Stage& st, const DimValues& at,
                                                     const std::vector<std::string>& zero,
                                                     const std::set<std::string>& empty) const {
  {
    std::lock_guard<std::mutex> lock(st.empty_mu);
    auto it = st.zero_plans.find(at);
    if (it != st.zero_plans.end()) return it->second;
  }
  // The outputs' shapes at the zero counts, as the model's shapes give them; where they do not
  // (an op refuses an empty input), the dims that follow the count between counts 1 and 2.
  DimValues one = at, two = at;
  for (const std::string& d : zero) one[d] = 1, two[d] = 2;
  Result<std::vector<Shape>> exact = st.session->output_shapes_at(at), r1 = st.session->output_shapes_at(one),
                             r2 = st.session->output_shapes_at(two);
  if (!exact.ok() && !r1.ok()) return r1.status();
  if (!exact.ok() && !r2.ok()) return r2.status();
  const std::vector<Shape> s1 = r1.ok() ? *r1 : *exact, s2 = r2.ok() ? *r2 : s1;  // no shapes: no change seen
  const Graph& g = st.session->graph();
  ZeroPlan plan;
  plan.follows = follows_empty(g, empty, st.count_constants, zero);
  for (size_t k = 0; k < st.outputs.size(); ++k) {
    Shape s = exact.ok() ? (*exact)[k] : s1[k];
    bool is_empty = exact.ok() && shape_numel(s) == 0;
    for (size_t d = 0; !exact.ok() && d < s.size(); ++d) {
      if (s1[k][d] == 1 && s2[k].size() == s.size() && s2[k][d] == 2) s[d] = 0, is_empty = true;
    }
    if (s1[k] != s2[k]) plan.follows[k] = true;
    if (!is_empty && plan.follows[k]) {
      return error(StatusCode::kUnsupported)
             << stage_str(st.index, stage_count()) << " of " << st.session->model().path << ": the count '" << zero[0]
             << "' is 0 and '" << g.value(g.outputs[k]).name << "' would not be empty; fusert computes no zero-size "
             << "tensors (it serves a count of 0 where every value that follows it is empty)";
    }
    plan.shapes.push_back(s);
  }
  std::lock_guard<std::mutex> lock(st.empty_mu);
  st.zero_plans[at] = plan;
  return plan;
}

}  // namespace fusert
