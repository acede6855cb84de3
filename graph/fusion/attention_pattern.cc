// Attention pattern matcher (see attention_pattern.h for the shape of the pattern).
#include "graph/fusion/attention_pattern.h"

#include <algorithm>
#include <cmath>

namespace fusert {

namespace {

// The single-use producer of `v` if it has op `op`, else -1.
int producer_if(const Graph& g, ValueId v, OpKind op) {
  if (v == kNoValue) return -1;
  const Value& val = g.value(v);
  if (val.producer < 0 || val.is_graph_output || val.consumers.size() != 1) return -1;
  return g.nodes[static_cast<size_t>(val.producer)].op == op ? val.producer : -1;
}

int single_consumer_if(const Graph& g, ValueId v, OpKind op) {
  const Value& val = g.value(v);
  if (val.is_graph_output || val.consumers.size() != 1) return -1;
  int c = val.consumers[0];
  return g.nodes[static_cast<size_t>(c)].op == op ? c : -1;
}

const std::vector<int64_t>& perm(const Graph& g, int n) { return g.nodes[static_cast<size_t>(n)].attr_ints("perm"); }

// Transpose(Reshape(x, [B,S,H,D]), want) -> x; records nodes. For K, also accepts
// Transpose(Transpose(Reshape(x), 0,2,1,3), 0,1,3,2).
ValueId head_source(const Graph& g, ValueId v, const std::vector<int64_t>& want, std::vector<int>* nodes) {
  int t = producer_if(g, v, OpKind::kTranspose);
  if (t < 0) return kNoValue;
  ValueId in = g.nodes[static_cast<size_t>(t)].inputs[0];
  if (perm(g, t) != want) {
    if (want != std::vector<int64_t>{0, 2, 3, 1} || perm(g, t) != std::vector<int64_t>{0, 1, 3, 2}) return kNoValue;
    int t0 = producer_if(g, in, OpKind::kTranspose);
    if (t0 < 0 || perm(g, t0) != std::vector<int64_t>{0, 2, 1, 3}) return kNoValue;
    nodes->push_back(t0);
    in = g.nodes[static_cast<size_t>(t0)].inputs[0];
  }
  int r = producer_if(g, in, OpKind::kReshape);
  if (r < 0 || g.value(in).shape.size() != 4) return kNoValue;
  nodes->push_back(t);
  nodes->push_back(r);
  return g.nodes[static_cast<size_t>(r)].inputs[0];
}

bool scalar_constant(const Graph& g, ValueId v, float* out) {
  const Value& val = g.value(v);
  if (!val.is_initializer || val.symbolic || val.data.empty() || val.data.dtype() != DType::kF32 ||
      val.data.numel() != 1)
    return false;
  *out = val.data.f32()[0];
  return true;
}

}  // namespace

bool match_attention(const Graph& g, int softmax, AttentionMatch* m) {
  const Node& sm = g.nodes[static_cast<size_t>(softmax)];
  if (sm.op != OpKind::kSoftmax) return false;
  const Shape& ss = g.value(sm.inputs[0]).shape;
  if (ss.size() != 4 || sm.attr_i("axis") != 3) return false;
  AttentionMatch r;
  r.nodes.push_back(softmax);
  ValueId x = sm.inputs[0];
  if (int add = producer_if(g, x, OpKind::kAdd); add >= 0) {
    const Node& a = g.nodes[static_cast<size_t>(add)];
    if (g.value(a.outputs[0]).shape != ss) return false;  // the mask must not broadcast the scores up
    int scores_side = g.value(a.inputs[0]).shape == ss ? 0 : 1;
    r.mask = a.inputs[1 - scores_side];
    Shape ms = g.value(r.mask).shape;
    if (g.value(r.mask).dtype != DType::kF32) return false;
    ms.insert(ms.begin(), 4 - ms.size(), 1);
    if (ms[1] != 1 || (ms[0] != 1 && ms[0] != ss[0]) || (ms[2] != 1 && ms[2] != ss[2]) || ms[3] != ss[3]) return false;
    r.mask_b_stride = ms[0] == 1 ? 0 : ms[2] * ms[3];
    r.mask_i_stride = ms[2] == 1 ? 0 : ms[3];
    r.nodes.push_back(add);
    x = a.inputs[scores_side];
  }
  for (OpKind op : {OpKind::kDiv, OpKind::kMul}) {
    int sc = producer_if(g, x, op);
    float c = 0;
    if (sc < 0 || !scalar_constant(g, g.nodes[static_cast<size_t>(sc)].inputs[1], &c) || c == 0) continue;
    // A divisor under ~2.9e-39 has no finite reciprocal: the kernel's scale would be inf (NaN
    // scores) where the unfused Div is finite, so no match.
    if (op == OpKind::kDiv && !std::isfinite(1.f / c)) continue;
    r.scale = op == OpKind::kDiv ? 1.f / c : c;
    r.nodes.push_back(sc);
    x = g.nodes[static_cast<size_t>(sc)].inputs[0];
    break;
  }
  int qk = producer_if(g, x, OpKind::kMatMul);
  if (qk < 0) return false;
  r.nodes.push_back(qk);
  const Node& qkn = g.nodes[static_cast<size_t>(qk)];
  r.q = head_source(g, qkn.inputs[0], {0, 2, 1, 3}, &r.nodes);
  r.k = head_source(g, qkn.inputs[1], {0, 2, 3, 1}, &r.nodes);
  int pv = single_consumer_if(g, sm.outputs[0], OpKind::kMatMul);
  if (r.q == kNoValue || r.k == kNoValue || pv < 0 || g.nodes[static_cast<size_t>(pv)].inputs[0] != sm.outputs[0])
    return false;
  r.nodes.push_back(pv);
  r.v = head_source(g, g.nodes[static_cast<size_t>(pv)].inputs[1], {0, 2, 1, 3}, &r.nodes);
  int tr = single_consumer_if(g, g.nodes[static_cast<size_t>(pv)].outputs[0], OpKind::kTranspose);
  if (r.v == kNoValue || tr < 0 || perm(g, tr) != std::vector<int64_t>{0, 2, 1, 3}) return false;
  int rs = single_consumer_if(g, g.nodes[static_cast<size_t>(tr)].outputs[0], OpKind::kReshape);
  if (rs < 0) return false;
  r.nodes.push_back(tr);
  r.nodes.push_back(rs);
  r.out = g.nodes[static_cast<size_t>(rs)].outputs[0];
  r.batch = ss[0];
  r.heads = ss[1];
  r.seq = ss[2];
  r.head_dim = g.value(g.nodes[static_cast<size_t>(pv)].outputs[0]).shape[3];
  if (ss[2] != ss[3]) return false;  // self-attention only
  for (ValueId t : {r.q, r.k, r.v, r.out}) {
    if (shape_numel(g.value(t).shape) != r.batch * r.seq * r.heads * r.head_dim ||
        g.value(t).shape.back() != r.heads * r.head_dim)
      return false;
  }
  std::sort(r.nodes.begin(), r.nodes.end());
  *m = r;
  return true;
}

}  // namespace fusert
