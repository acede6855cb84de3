// PassManager: runs passes in order, verifies after each, records what each did.
#include <chrono>

#include "graph/passes/pass.h"
#include "graph/passes/pattern_rewrite.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace fusert {

std::string PassRecord::log_line() const {
  std::string s = pass + ": " + (changed ? "changed" : "unchanged") + ", nodes " + std::to_string(nodes_before) +
                  " -> " + std::to_string(nodes_after);
  if (!summary.empty()) s += " (" + summary + ")";
  return s;
}

Status verify_graph_after_pass(const Graph& g, const std::string& pass) {
  Status st = verify_graph(g);
  if (!st.ok()) return error(StatusCode::kInternal) << "after pass '" << pass << "': " << st.message();
  for (const Value& v : g.values) {
    if (!v.is_initializer || v.data.empty()) continue;
    if (v.data.shape() != v.shape || v.data.dtype() != v.dtype) {
      return error(StatusCode::kInternal)
             << "after pass '" << pass << "': initializer '" << v.name << "' is declared " << dtype_name(v.dtype) << " "
             << shape_str(v.shape) << " but holds " << dtype_name(v.data.dtype()) << " " << shape_str(v.data.shape());
    }
  }
  Graph copy = g;  // tensors share buffers: cheap
  st = infer_shapes(copy);
  if (!st.ok())
    return error(StatusCode::kInternal) << "after pass '" << pass << "': shape inference fails: " << st.message();
  for (const Node& n : g.nodes) {
    for (ValueId out : n.outputs) {
      const Value& have = g.value(out);
      const Value& want = copy.value(out);
      if (have.shape != want.shape || have.dtype != want.dtype) {
        return error(StatusCode::kInternal)
               << "after pass '" << pass << "': value '" << have.name << "' of node '" << n.name << "' is "
               << dtype_name(have.dtype) << " " << shape_str(have.shape) << " but shape inference gives "
               << dtype_name(want.dtype) << " " << shape_str(want.shape);
      }
    }
  }
  return Status();
}

PassManager& PassManager::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

Result<bool> PassManager::run(Graph& g) {
  records_.clear();
  bool any = false;
  for (const auto& p : passes_) {
    PassRecord rec;
    rec.pass = p->name();
    rec.nodes_before = g.nodes.size();
    auto t0 = std::chrono::steady_clock::now();
    Result<bool> r = p->run(g);
    rec.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!r.ok()) return Status(r.status().code(), "pass '" + rec.pass + "': " + r.status().message());
    rec.changed = *r;
    rec.nodes_after = g.nodes.size();
    rec.summary = p->summary();
    records_.push_back(rec);
    any = any || rec.changed;
    if (verify_) FUSERT_RETURN_IF_ERROR(verify_graph_after_pass(g, rec.pass));
  }
  return any;
}

std::vector<std::string> PassManager::log_lines() const {
  std::vector<std::string> lines;
  for (const PassRecord& r : records_) lines.push_back(r.log_line());
  return lines;
}

Result<std::vector<std::string>> run_canonicalize(Graph& g, bool verify) {
  PassManager pm(verify);
  bool quantised = false;  // a QDQ model: its convolutions read as QLinearConv first (the int8 weights
  for (const Node& n : g.nodes) quantised |= n.op == OpKind::kQuantizeLinear;  // fold to f32 after)
  if (quantised) {
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(make_qdq_conv_rule());
    rules.push_back(make_qdq_add_rule());
    rules.push_back(make_qdq_maxpool_rule());
    pm.add(make_pattern_rewrite_pass(std::move(rules))).add(make_qdq_gemm_pass());
  }
  pm.add(make_constant_folding_pass())
      .add(make_bn_folding_pass())
      .add(make_pattern_rewrite_pass())
      .add(make_unary_hoist_pass())
      .add(make_dead_code_pass());
  FUSERT_ASSIGN_OR_RETURN(bool changed, pm.run(g));
  (void)changed;
  return pm.log_lines();
}

}  // namespace fusert
