// CPU lowering of RNN, GRU and LSTM (kernels/cpu/rnn_kernels.h): one opaque step; sequence_lens
// are checked to lie in [0, S] before the kernel runs (an error names node, tensor and position).
// The CUDA backend runs the same step through its host fallback.
#include <sstream>

#include "kernels/cpu/rnn_kernels.h"
#include "runtime/cpu/lower_single_util.h"
#include "runtime/execution_plan.h"

namespace fusert {

namespace {

using cpu_lowering::shape_of;

// ONNX's activation names with their default alpha and beta, and which of the two each takes.
bool activation_of(const std::string& name, cpu::RnnActivation* a, bool* takes_alpha, bool* takes_beta) {
  static const struct {
    const char* name;
    cpu::RnnAct f;
    float alpha, beta;
    bool alpha_used, beta_used;
  } table[] = {{"Sigmoid", cpu::RnnAct::kSigmoid, 0, 0, false, false},
               {"Tanh", cpu::RnnAct::kTanh, 0, 0, false, false},
               {"Relu", cpu::RnnAct::kRelu, 0, 0, false, false},
               {"HardSigmoid", cpu::RnnAct::kHardSigmoid, 0.2f, 0.5f, true, true},
               {"LeakyRelu", cpu::RnnAct::kLeakyRelu, 0.01f, 0, true, false},
               {"ThresholdedRelu", cpu::RnnAct::kThresholdedRelu, 1, 0, true, false},
               {"ScaledTanh", cpu::RnnAct::kScaledTanh, 1, 1, true, true},
               {"Affine", cpu::RnnAct::kAffine, 1, 0, true, true},
               {"Elu", cpu::RnnAct::kElu, 1, 0, true, false},
               {"Softsign", cpu::RnnAct::kSoftsign, 0, 0, false, false},
               {"Softplus", cpu::RnnAct::kSoftplus, 0, 0, false, false}};
  for (const auto& e : table) {
    if (name != e.name) continue;
    *a = cpu::RnnActivation{e.f, e.alpha, e.beta};
    *takes_alpha = e.alpha_used;
    *takes_beta = e.beta_used;
    return true;
  }
  return false;
}

// The node's activations for every direction (defaults filled, one direction's list repeated for
// the other); activation_alpha / activation_beta are consumed in order by the activations that
// take a value (ONNX Runtime's reading), the others keep their defaults.
Result<std::vector<cpu::RnnActivation>> activations(const Node& n, cpu::RnnKind kind, int dirs) {
  std::vector<std::string> names;
  std::stringstream ss(n.attr_s("activations"));
  for (std::string item; std::getline(ss, item, ',');) names.push_back(item);
  const size_t per = kind == cpu::RnnKind::kLstm ? 3 : kind == cpu::RnnKind::kGru ? 2 : 1;
  if (names.empty()) {
    names = kind == cpu::RnnKind::kLstm  ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
            : kind == cpu::RnnKind::kGru ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                         : std::vector<std::string>{"Tanh"};
  }
  if (names.size() == per && dirs == 2) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (names.size() != per * static_cast<size_t>(dirs)) {
    return error(StatusCode::kInvalidArgument) << "node '" << n.name << "' (" << op_name(n.op) << "): " << names.size()
                                               << " activations, expected " << per * dirs;
  }
  const std::vector<double>& alpha = n.attrs.at("activation_alpha").floats;
  const std::vector<double>& beta = n.attrs.at("activation_beta").floats;
  std::vector<cpu::RnnActivation> out;
  size_t ia = 0, ib = 0;  // the lists are consumed in order by the activations that take a value
  for (size_t k = 0; k < names.size(); ++k) {
    cpu::RnnActivation a;
    bool takes_alpha = false, takes_beta = false;
    if (!activation_of(names[k], &a, &takes_alpha, &takes_beta))
      return error(StatusCode::kUnsupported)
             << "node '" << n.name << "' (" << op_name(n.op) << "): activation '" << names[k] << "'";
    if (takes_alpha && ia < alpha.size()) a.alpha = static_cast<float>(alpha[ia++]);
    if (takes_beta && ib < beta.size()) a.beta = static_cast<float>(beta[ib++]);
    out.push_back(a);
  }
  return out;
}

ValueId input_or_none(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : kNoValue; }

Status lower_recurrent(const Graph& g, const Node& n, cpu::RnnKind kind, Step& s) {
  cpu::RnnParams p;
  p.kind = kind;
  p.batch_major = n.attr_i("layout") != 0;
  const Shape& x = shape_of(g, n.inputs[0]);
  p.seq = p.batch_major ? x[1] : x[0];
  p.batch = p.batch_major ? x[0] : x[1];
  p.input = x[2];
  p.hidden = n.attr_i("hidden_size");
  p.dirs = n.attr_s("direction") == "bidirectional" ? 2 : 1;
  p.reverse = n.attr_s("direction") == "reverse";
  p.clip = static_cast<float>(n.attr_f("clip"));
  p.input_forget = kind == cpu::RnnKind::kLstm && n.attr_i("input_forget") != 0;
  p.linear_before_reset = kind == cpu::RnnKind::kGru && n.attr_i("linear_before_reset") != 0;
  FUSERT_ASSIGN_OR_RETURN(p.acts, activations(n, kind, p.dirs));
  const ValueId xi = n.inputs[0], wi = n.inputs[1], ri = n.inputs[2], bi = input_or_none(n, 3),
                li = input_or_none(n, 4), hi = input_or_none(n, 5), ci = input_or_none(n, 6), pi = input_or_none(n, 7);
  const ValueId yi = n.outputs[0], yhi = n.outputs.size() > 1 ? n.outputs[1] : kNoValue,
                yci = n.outputs.size() > 2 ? n.outputs[2] : kNoValue;
  const bool lens_i32 = li != kNoValue && g.value(li).dtype == DType::kI32;
  if (li != kNoValue) {
    const std::string node = n.name, op = op_name(n.op), tensor = g.value(li).name;
    const int64_t batch = p.batch, seq = p.seq;
    s.check = [=](const BufferTable& b) -> Status {
      for (int64_t k = 0; k < batch; ++k) {
        const int64_t v =
            lens_i32 ? static_cast<const int32_t*>(b.raw(li))[k] : static_cast<const int64_t*>(b.raw(li))[k];
        if (v >= 0 && v <= seq) continue;
        return error(StatusCode::kInvalidArgument)
               << "node '" << node << "' (" << op << "): length " << v << " at position " << k << " of '" << tensor
               << "' is outside [0, " << seq << "]";
      }
      return Status();
    };
  }
  s.kernel = op_name(n.op);
  s.run = [=](const BufferTable& b) {
    cpu::RnnTensors t;
    const auto in = [&](ValueId v) { return v == kNoValue ? nullptr : b.f32(v); };
    t.x = b.f32(xi);
    t.w = b.f32(wi);
    t.r = b.f32(ri);
    t.b = in(bi);
    t.h0 = in(hi);
    t.c0 = in(ci);
    t.p = in(pi);
    t.lens = li == kNoValue ? nullptr : b.raw(li);
    t.lens_i32 = lens_i32;
    t.y = b.f32(yi);
    t.yh = yhi == kNoValue ? nullptr : b.f32(yhi);
    t.yc = yci == kNoValue ? nullptr : b.f32(yci);
    cpu::rnn(p, t);
  };
  return Status();
}

}  // namespace

#define LOWER(name) Status lower_##name(const Graph& g, int ni, Step& s)
#define NODE (g.nodes[static_cast<size_t>(ni)])

LOWER(RNN) { return lower_recurrent(g, NODE, cpu::RnnKind::kRnn, s); }
LOWER(GRU) { return lower_recurrent(g, NODE, cpu::RnnKind::kGru, s); }
LOWER(LSTM) { return lower_recurrent(g, NODE, cpu::RnnKind::kLstm, s); }

}  // namespace fusert
