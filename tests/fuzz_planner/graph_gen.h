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
  /// A node with one output of `out` shape; `attrs` is a YAML flow map body ("" = none).
  std::string node(const std::string& op, const std::vector<std::string>& inputs, const Dims& out,
                   const std::string& attrs = "");
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

// Motif families (graph_gen_cnn.cc, graph_gen_dense.cc): each appends to `e`, reading and
// replacing the running value `cur`.
void cnn_motif(Emitter& e, Rng& r, std::string& cur, std::string* name);
void dense_motif(Emitter& e, Rng& r, std::string& cur, std::string* name);
void transformer_motif(Emitter& e, Rng& r, std::string& cur, int64_t batch, int64_t seq, std::string* name);
/// CNN motifs of resampling and data movement (graph_gen_resample.cc): an FPN join of a Resize
/// upsample with a lateral conv, a ConvTranspose head, Pad before a valid conv, an Expand or
/// Tile gate. `cur` is a computed NCHW value; the motif's name goes to `name`.
std::string resample_motif(Emitter& e, Rng& r, const std::string& cur, std::string* name);

/// A shape that broadcasts to `s` (numpy rules): some dims set to 1, leading dims maybe dropped;
/// covers scalar, per-channel, per-row, per-column, spatial 1x1 and full patterns.
Dims broadcast_shape(Rng& r, const Dims& s);
/// 1-3 elementwise ops (unary activations, binary ops with a broadcasting constant or input).
std::string epilogue_chain(Emitter& e, Rng& r, std::string cur, int max_ops = 3);

}  // namespace fusert::fuzz
