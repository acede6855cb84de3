// Generator core: the random stream, the YAML emitter, broadcast operands, epilogue chains and
// the top-level choice of family and motifs.
#include "tests/fuzz_planner/graph_gen.h"

#include <sstream>

namespace fusert::fuzz {

uint64_t Rng::next() {
  uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
int64_t Rng::below(int64_t n) { return n <= 1 ? 0 : static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
int64_t Rng::range(int64_t lo, int64_t hi) { return lo + below(hi - lo + 1); }
bool Rng::chance(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

std::string Emitter::fresh(const std::string& prefix) { return prefix + std::to_string(counter_++); }

std::string Emitter::input(const Dims& shape) {
  std::string n = fresh("in");
  inputs_.push_back("  - {name: " + n + ", shape: " + shape_str(shape) + "}");
  shapes_[n] = shape;
  return n;
}

std::string Emitter::weight(const Dims& shape, const std::string& init) {
  std::string n = fresh("w");
  inits_.push_back("  - {name: " + n + ", shape: " + shape_str(shape) + (init.empty() ? "" : ", init: " + init) + "}");
  shapes_[n] = shape;
  return n;
}

std::string Emitter::const_i64(const std::vector<int64_t>& values) {
  std::string n = fresh("k");
  inits_.push_back("  - {name: " + n + ", shape: [" + std::to_string(values.size()) +
                   "], dtype: i64, value: " + shape_str(values) + "}");
  shapes_[n] = {static_cast<int64_t>(values.size())};
  return n;
}

std::string Emitter::const_f32(float value) {
  std::string n = fresh("k");
  std::ostringstream os;
  os.precision(9);
  os << std::showpoint << value;
  inits_.push_back("  - {name: " + n + ", shape: [], value: " + os.str() + "}");
  shapes_[n] = {};
  return n;
}

std::string Emitter::const_f32s(const std::vector<float>& values) {
  std::string n = fresh("k");
  std::ostringstream os;
  os.precision(9);
  os << std::showpoint;
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  inits_.push_back("  - {name: " + n + ", shape: [" + std::to_string(values.size()) + "], value: [" + os.str() + "]}");
  shapes_[n] = {static_cast<int64_t>(values.size())};
  return n;
}

std::string Emitter::const_ints(const std::string& dtype, const Dims& shape, const std::vector<int64_t>& values) {
  std::string n = fresh("k");
  inits_.push_back("  - {name: " + n + ", shape: " + shape_str(shape) + ", dtype: " + dtype +
                   ", value: " + shape_str(values) + "}");
  shapes_[n] = shape;
  return n;
}

std::string Emitter::node(const std::string& op, const std::vector<std::string>& inputs, const Dims& out,
                          const std::string& attrs) {
  return nodes(op, inputs, {out}, attrs)[0];
}

std::vector<std::string> Emitter::nodes(const std::string& op, const std::vector<std::string>& inputs,
                                        const std::vector<Dims>& outs, const std::string& attrs) {
  std::vector<std::string> ys;
  for (size_t i = 0; i < outs.size(); ++i) ys.push_back(fresh("v"));
  std::string line = "  - {name: " + fresh("n") + "_" + op + ", op: " + op + ", inputs: [";
  for (size_t i = 0; i < inputs.size(); ++i) {
    line += (i ? ", " : "") + (inputs[i].empty() ? std::string("\"\"") : inputs[i]);
    used_.insert(inputs[i]);
  }
  line += "], outputs: [";
  for (size_t i = 0; i < ys.size(); ++i) line += (i ? ", " : "") + ys[i];
  line += "]";
  if (!attrs.empty()) line += ", attrs: {" + attrs + "}";
  nodes_.push_back(line + "}");
  for (size_t i = 0; i < ys.size(); ++i) {
    shapes_[ys[i]] = outs[i];
    produced_.insert(ys[i]);
    order_.push_back(ys[i]);
  }
  return ys;
}

std::vector<std::string> Emitter::computed_of(const Dims& shape) const {
  std::vector<std::string> out;
  for (const std::string& v : order_)
    if (shapes_.at(v) == shape) out.push_back(v);
  return out;
}

std::string Emitter::yaml(const std::string& name, const std::string& header) const {
  std::vector<std::string> outs;
  for (const std::string& v : order_)
    if (marked_.count(v) || !used_.count(v)) outs.push_back(v);
  std::ostringstream os;
  os << header << "fusert: 1\nname: " << name << "\ninputs:\n";
  for (const std::string& l : inputs_) os << l << "\n";
  os << "outputs: [";
  for (size_t i = 0; i < outs.size(); ++i) os << (i ? ", " : "") << outs[i];
  os << "]\n";
  if (!inits_.empty()) {
    os << "initializers:\n";
    for (const std::string& l : inits_) os << l << "\n";
  }
  os << "nodes:\n";
  for (const std::string& l : nodes_) os << l << "\n";
  return os.str();
}

Dims broadcast_shape(Rng& r, const Dims& s) {
  switch (r.below(6)) {
    case 0:
      return r.chance(0.5) ? Dims{} : Dims{1};  // scalar
    case 1:
      return s;  // full
    default:
      break;
  }
  Dims t = s;
  for (int64_t& d : t)
    if (r.chance(0.5)) d = 1;
  size_t drop = static_cast<size_t>(r.below(static_cast<int64_t>(t.size())));
  // Only leading dims of size 1 may be dropped without changing the pattern's meaning; dropping
  // a non-1 leading dim is still a valid broadcast (it broadcasts over that dim).
  t.erase(t.begin(), t.begin() + static_cast<long>(drop));
  return t;
}

namespace {

const std::vector<std::string> kUnary = {
    "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Gelu", "Erf", "Identity", "Softplus", "Neg", "Abs",
    "LeakyRelu", "HardSwishArithmetic", "Swish", "SwishArithmetic",
    // ONNX's other smooth functions (the discontinuous ones, Floor/Round/Sign/Shrink, would flip at
    // a rounding difference; conformance and tests/graph/test_onnx_unary.cc check them).
    "Elu", "Selu", "Celu", "Softsign", "Sin", "Cos", "Atan", "Asinh"};
const std::vector<std::string> kBinary = {"Add", "Sub", "Mul", "Div"};

std::string unary(Emitter& e, Rng& r, const std::string& cur) {
  const std::string& op = r.pick(kUnary);
  const Dims& s = e.shape(cur);
  if (op == "Clip") {
    if (r.chance(0.5)) return e.node(op, {cur}, s, "min: 0.0, max: 6.0");
    return e.node(op, {cur, e.const_f32(-0.5f), e.const_f32(0.75f)}, s);
  }
  if (op == "HardSigmoid") return e.node(op, {cur}, s, r.chance(0.5) ? "" : "alpha: 0.1666667, beta: 0.5");
  if (op == "Gelu") return e.node(op, {cur}, s, r.chance(0.5) ? "" : "approximate: tanh");
  if (op == "LeakyRelu") return e.node(op, {cur}, s, r.chance(0.5) ? "" : "alpha: 0.2");
  if (op == "Swish") return e.node(op, {cur}, s, r.chance(0.7) ? "" : "alpha: 1.7");
  if (op == "Elu" || op == "Celu") return e.node(op, {cur}, s, r.chance(0.5) ? "" : "alpha: 0.7");
  if (op == "SwishArithmetic") {  // SiLU as exporters write it: x * sigmoid(x)
    const std::string sg = e.node("Sigmoid", {cur}, s);
    return r.chance(0.5) ? e.node("Mul", {cur, sg}, s) : e.node("Mul", {sg, cur}, s);
  }
  if (op == "HardSwishArithmetic") {
    // Hard-swish as exporters write it (graph/passes/hardswish_rule.cc): x * clip(x + 3, 0, 6) / 6
    // or x * (clip(x + 3, 0, 6) / 6), now and then with a constant that must not match.
    const float three = r.chance(0.15) ? 2.5f : 3.0f, six = r.chance(0.15) ? 5.0f : 6.0f;
    const std::string a = e.node("Add", {cur, e.const_f32(three)}, s);
    const std::string c = r.chance(0.5) ? e.node("Clip", {a, e.const_f32(0.0f), e.const_f32(6.0f)}, s)
                                        : e.node("Clip", {a}, s, "min: 0.0, max: 6.0");
    if (r.chance(0.5)) return e.node("Div", {e.node("Mul", {cur, c}, s), e.const_f32(six)}, s);
    return e.node("Mul", {e.node("Mul", {c, e.const_f32(1.0f / six)}, s), cur}, s);
  }
  return e.node(op, {cur}, s);
}

}  // namespace

std::string epilogue_chain(Emitter& e, Rng& r, std::string cur, int max_ops) {
  int n = static_cast<int>(r.range(1, max_ops));
  for (int i = 0; i < n; ++i) {
    if (r.chance(0.55)) {
      cur = unary(e, r, cur);
      continue;
    }
    const std::string& op = r.pick(kBinary);
    const Dims s = e.shape(cur);
    Dims t = broadcast_shape(r, s);
    bool first = r.chance(0.5);  // the operand on the left
    // Denominators stay away from zero; an operand from a graph input broadcasts at run time.
    std::string init = op == "Div" && first == false ? "bn_scale" : "uniform";
    std::string operand = r.chance(0.2) ? e.input(t) : e.weight(t, init);
    if (op == "Div" && first) {  // t / v: keep v away from zero first
      cur = e.node("Sigmoid", {cur}, s);
      cur = e.node("Add", {cur, e.const_f32(0.5f)}, s);
    }
    cur = e.node(op, first ? std::vector<std::string>{operand, cur} : std::vector<std::string>{cur, operand}, s);
  }
  return cur;
}

GenGraph generate(uint64_t seed, const std::set<int>& skip) {
  Rng top(seed);
  GenGraph out;
  if (is_qdq_seed(seed)) {
    Emitter q;
    qdq_graph(q, seed, skip, &out);
    return out;
  }
  int fam = static_cast<int>(top.below(10));
  out.family = fam < 5 ? "cnn" : fam < 8 ? "dense" : "transformer";
  Emitter e;
  std::string cur;
  int64_t batch = 1, seq = 1;
  if (out.family == "cnn") {
    cur = e.input({top.range(1, 2), top.range(1, 8), top.range(1, 9), top.range(1, 9)});
  } else if (out.family == "dense") {
    cur = e.input({top.range(1, 9), top.range(1, 12)});
  } else {
    batch = top.range(1, 2);
    seq = top.pick(std::vector<int64_t>{1, 3, 4, 5, 8});
    cur = e.input({batch * seq, top.pick(std::vector<int64_t>{4, 6, 8, 16})});
  }
  // A stem makes the running value computed, so that later joins are real two-path joins.
  if (top.chance(0.7)) cur = e.node("Relu", {cur}, e.shape(cur));
  // A QDQ model's input (FakeQuantize: QuantizeLinear -> DequantizeLinear, graph/passes/qdq_rule.cc),
  // from a stream of its own so that the other draws stay as they were. Only on the input: it rounds,
  // so after arithmetic that kernels order differently it would flip a quantum (ONNX conformance,
  // tests/graph/test_onnx_quant.cc and tools/ort_cases_quant.py check it there).
  Rng qr(seed * 0x9E3779B97F4A7C15ull + 0x51ED270B27u);
  if (qr.chance(0.25))
    cur = e.node("FakeQuantize", {cur}, e.shape(cur),
                 qr.chance(0.5) ? "scale: 0.05, low: -128.0" : "scale: 0.02, low: -3.0");
  int motifs = static_cast<int>(top.range(1, 6));
  for (int i = 0; i < motifs; ++i) {
    Rng r(seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull);
    std::string name;
    Emitter* target = &e;
    Emitter scratch;  // a skipped motif still draws its name from its own stream
    std::string scratch_cur = cur;
    if (skip.count(i)) {
      scratch = e;
      target = &scratch;
    }
    std::string& c = skip.count(i) ? scratch_cur : cur;
    if (out.family == "cnn")
      cnn_motif(*target, r, c, &name);
    else if (out.family == "dense")
      dense_motif(*target, r, c, &name);
    else
      transformer_motif(*target, r, c, batch, seq, &name);
    out.motifs.push_back(name + (skip.count(i) ? " (skipped)" : ""));
    const bool mark = top.chance(0.15);  // drawn either way: later draws stay as they were
    if (!skip.count(i) && mark) e.mark_output(cur);
  }
  std::string header = "# fuzz_planner: seed " + std::to_string(seed) + ", family " + out.family + ", motifs:";
  for (const std::string& m : out.motifs) header += " " + m + ";";
  out.yaml = e.yaml("fuzz_" + std::to_string(seed), header + "\n");
  out.nodes = e.nodes();
  return out;
}

}  // namespace fusert::fuzz
