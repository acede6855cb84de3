// The differential planner fuzzer's graph generator: seeded random valid models (fusert YAML)
// built from motifs that fusion touches: epilogue chains after conv/GEMM anchors, residuals and
// diamonds, parallel branches of different cost, sibling GEMMs/convs on one input, every
// broadcast pattern of a joining operand, squeeze-and-excitation gates, pooling, attention and
// Transformer blocks. A graph is a function of (seed, skipped motifs): each motif draws from its
// own random stream, so the shrinker can drop motifs and keep the others as they were. CNN
// graphs also draw Resize, ConvTranspose, Pad, Expand and Tile (the real-model set's ops).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/base/tensor.h"  // shape_str: "[1, 2, 3]", also the YAML flow-list form

namespace fusert::fuzz {

/// splitmix64: small, seedable, identical on every platform (std:: distributions are not).
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next();
  int64_t below(int64_t n);               ///< uniform in [0, n)
  int64_t range(int64_t lo, int64_t hi);  ///< uniform in [lo, hi]
  bool chance(double p);
  template <class T>
  const T& pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(below(static_cast<int64_t>(v.size())))];
  }

 private:
  uint64_t s_;
};

using Dims = std::vector<int64_t>;

/// Accumulates a model: graph inputs, initializers, nodes; tracks value shapes and uses.
class Emitter {
 public:
  std::string input(const Dims& shape);
  /// An initializer; `init` one of the FORMAT.md kinds ("" = the default for the rank).
  std::string weight(const Dims& shape, const std::string& init = "");
  std::string const_i64(const std::vector<int64_t>& values);
  std::string const_f32(float value);
  std::string const_f32s(const std::vector<float>& values);
  /// An integer constant of `dtype` ("i32", "i8", "u8") and `shape`.
  std::string const_ints(const std::string& dtype, const Dims& shape, const std::vector<int64_t>& values);
  /// A node with one output of `out` shape; `attrs` is a YAML flow map body ("" = none).
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const Dims& out,
                   const std::string& attrs = "");
  /// A node with one output per entry of `outs` (their shapes), e.g. Split.
  std::vector<std::string> nodes(const std::string& op, const std::vector<std::string>& inputs,
                                 const std::vector<Dims>& outs, const std::string& attrs = "");
  const Dims& shape(const std::string& v) const { return shapes_.at(v); }
  bool computed(const std::string& v) const { return produced_.count(v) > 0; }
  /// Earlier computed values of exactly `shape` (residual and join partners).
  std::vector<std::string> computed_of(const Dims& shape) const;
  void mark_output(const std::string& v) { marked_.insert(v); }
  /// The model: outputs are the marked values plus every computed value nobody reads.
  std::string yaml(const std::string& name, const std::string& header) const;
  int nodes() const { return static_cast<int>(nodes_.size()); }

 private:
  std::string fresh(const std::string& prefix);
  int counter_ = 0;
  std::vector<std::string> inputs_, inits_, nodes_, order_;
  std::map<std::string, Dims> shapes_;
  std::set<std::string> produced_, marked_, used_;
};

/// What the generator produced for one (seed, skip) pair.
struct GenGraph {
  std::string family;               ///< "cnn", "dense", "transformer"
  std::vector<std::string> motifs;  ///< motif names, by index (skipped ones included)
  std::string yaml;
  int nodes = 0;
};

/// Builds the graph for `seed`, leaving out the motifs whose indices are in `skip`.
GenGraph generate(uint64_t seed, const std::set<int>& skip = {});
/// True when `seed`'s graph is a QDQ network (family "qdq", graph_gen_quant.cc): drawn from a stream
/// of its own, so that the other seeds keep their graphs.
bool is_qdq_seed(uint64_t seed);
/// A QDQ network as ONNX Runtime's quantize_static writes one: the input quantised once, then
/// DequantizeLinear -> Conv (int8 weights, int32 bias) -> [Relu | Clip] -> QuantizeLinear, residual Adds
/// and MaxPools between the same pairs, dequantised at the outputs. Every value between kernels is
/// 8-bit, so every fusion mode and kernel set must give the same bits (fusert's rewrites read each
/// pattern as QLinearConv, QLinearAdd, an 8-bit MaxPool; tests/fuzz_planner/fuzz_planner.cc).
void qdq_graph(Emitter& e, uint64_t seed, const std::set<int>& skip, GenGraph* out);

// Motif families (graph_gen_cnn.cc, graph_gen_dense.cc): each appends to `e`, reading and
// replacing the running value `cur`.
void cnn_motif(Emitter& e, Rng& r, std::string& cur, std::string* name);
void dense_motif(Emitter& e, Rng& r, std::string& cur, std::string* name);
void transformer_motif(Emitter& e, Rng& r, std::string& cur, int64_t batch, int64_t seq, std::string* name);
/// CNN motifs of resampling and data movement (graph_gen_resample.cc): an FPN join of a Resize
/// upsample with a lateral conv, a ConvTranspose head, Pad before a valid conv, an Expand or
/// Tile gate. `cur` is a computed NCHW value; the motif's name goes to `name`.
std::string resample_motif(Emitter& e, Rng& r, const std::string& cur, std::string* name);

/// A convolution's attributes (graph_gen_cnn.cc): every kernel shape, stride, pad, dilation and group.
struct ConvSpec {
  int64_t m = 1, kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, group = 1;
  int64_t pt = 0, pl = 0, pb = 0, pr = 0;
  bool bias = true;
};
ConvSpec random_conv(Rng& r, const Dims& x);
Dims conv_out(const Dims& x, const ConvSpec& c);
std::string conv_attrs(const ConvSpec& c);  ///< the YAML attrs body

/// A shape that broadcasts to `s` (numpy rules): some dims set to 1, leading dims maybe dropped;
/// covers scalar, per-channel, per-row, per-column, spatial 1x1 and full patterns.
Dims broadcast_shape(Rng& r, const Dims& s);
/// 1-3 elementwise ops (unary activations, binary ops with a broadcasting constant or input).
std::string epilogue_chain(Emitter& e, Rng& r, std::string cur, int max_ops = 3);

}  // namespace fusert::fuzz
