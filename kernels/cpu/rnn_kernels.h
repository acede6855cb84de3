// CPU kernels of ONNX's recurrent ops, RNN, GRU and LSTM (opset 14 semantics): the input
// projection of every step is one GEMM per direction, then each step one GEMM of the hidden
// state by R and the gate arithmetic. Opaque ops (never inside a fusion group).
#pragma once

#include <cstdint>
#include <vector>

namespace fusert::cpu {

enum class RnnKind { kRnn, kGru, kLstm };

/// An activation of the cell's list (ONNX's names), with its alpha and beta.
enum class RnnAct {
  kSigmoid,
  kTanh,
  kRelu,
  kHardSigmoid,
  kLeakyRelu,
  kThresholdedRelu,
  kScaledTanh,
  kAffine,
  kElu,
  kSoftsign,
  kSoftplus
};
struct RnnActivation {
  RnnAct f = RnnAct::kTanh;
  float alpha = 0, beta = 0;
};
float rnn_activate(const RnnActivation& a, float x);

/// Shapes ([S, B, I] inputs, or [B, S, I] with batch_major) and options. `acts` holds the
/// activations of each direction in order (RNN: f; GRU: f, g; LSTM: f, g, h), forward first.
/// clip <= 0: none.
struct RnnParams {
  RnnKind kind = RnnKind::kLstm;
  int64_t seq = 1, batch = 1, input = 1, hidden = 1;
  int dirs = 1;
  bool reverse = false;  ///< one direction, run from the end
  bool batch_major = false;
  float clip = 0;
  bool input_forget = false;         ///< LSTM: f = 1 - i
  bool linear_before_reset = false;  ///< GRU
  std::vector<RnnActivation> acts;
};

/// The tensors (null where the node has no such input or output). w [D, G*H, I], r [D, G*H, H],
/// b [D, 2*G*H] (input then recurrent biases), lens [B] (i32 or i64, each in [0, S]; null: all
/// S), h0 / c0 [D, B, H] ([B, D, H] batch-major), p [D, 3*H] (LSTM peepholes i, o, f); y
/// [S, D, B, H] ([B, S, D, H]), yh / yc [D, B, H] ([B, D, H]). G = 1, 3 or 4 gates in ONNX's
/// order (GRU z, r, h; LSTM i, o, f, c). Steps past a sequence's length write 0 to y and keep
/// its state; a sequence of length 0 ends in state 0 (yh, yc), as ONNX Runtime gives.
struct RnnTensors {
  const float *x = nullptr, *w = nullptr, *r = nullptr, *b = nullptr, *h0 = nullptr, *c0 = nullptr, *p = nullptr;
  const void* lens = nullptr;
  bool lens_i32 = true;
  float *y = nullptr, *yh = nullptr, *yc = nullptr;
};
void rnn(const RnnParams& p, const RnnTensors& t);

}  // namespace fusert::cpu
