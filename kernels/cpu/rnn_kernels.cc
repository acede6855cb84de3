// RNN, GRU and LSTM (kernels/cpu/rnn_kernels.h).
#include "kernels/cpu/rnn_kernels.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/cpu_kernels.h"

namespace fusert::cpu {

float rnn_activate(const RnnActivation& a, float x) {
  switch (a.f) {
    case RnnAct::kSigmoid:
      return 1.f / (1.f + std::exp(-x));
    case RnnAct::kTanh:
      return std::tanh(x);
    case RnnAct::kRelu:
      return std::max(x, 0.f);
    case RnnAct::kHardSigmoid:
      return std::clamp(a.alpha * x + a.beta, 0.f, 1.f);
    case RnnAct::kLeakyRelu:
      return x >= 0 ? x : a.alpha * x;
    case RnnAct::kThresholdedRelu:
      return x > a.alpha ? x : 0.f;
    case RnnAct::kScaledTanh:
      return a.alpha * std::tanh(a.beta * x);
    case RnnAct::kAffine:
      return a.alpha * x + a.beta;
    case RnnAct::kElu:
      return x >= 0 ? x : a.alpha * (std::exp(x) - 1.f);
    case RnnAct::kSoftsign:
      return x / (1.f + std::fabs(x));
    case RnnAct::kSoftplus:
      return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.f);
  }
  return x;
}

namespace {

int gates_of(RnnKind k) { return k == RnnKind::kLstm ? 4 : k == RnnKind::kGru ? 3 : 1; }
int acts_of(RnnKind k) { return k == RnnKind::kLstm ? 3 : k == RnnKind::kGru ? 2 : 1; }

// One direction's run; the state arrays are [B, H].
class Direction {
 public:
  Direction(const RnnParams& p, const RnnTensors& t, int d) : p_(p), t_(t), d_(d) {
    const int64_t g = gates_of(p.kind), gh = g * p.hidden;
    w_ = t.w + d * gh * p.input;
    r_ = t.r + d * gh * p.hidden;
    acts_ = p.acts.data() + d * acts_of(p.kind);
    wb_.assign(static_cast<size_t>(gh), 0.f);
    rb_.assign(static_cast<size_t>(gh), 0.f);
    if (t.b) {
      std::copy(t.b + d * 2 * gh, t.b + d * 2 * gh + gh, wb_.begin());
      std::copy(t.b + d * 2 * gh + gh, t.b + (d + 1) * 2 * gh, rb_.begin());
    }
    h_.assign(static_cast<size_t>(p.batch * p.hidden), 0.f);
    c_ = h_;
    for (int64_t b = 0; b < p.batch; ++b) {
      for (int64_t j = 0; j < p.hidden; ++j) {
        const int64_t s = state_at(b) + j;
        if (t.h0) h_[static_cast<size_t>(b * p.hidden + j)] = t.h0[s];
        if (t.c0) c_[static_cast<size_t>(b * p.hidden + j)] = t.c0[s];
      }
    }
  }

  void run() {
    const int64_t g = gates_of(p_.kind), gh = g * p_.hidden, B = p_.batch;
    // Input projections of every step: xw[t, b, :] = x[t, b] W^T + Wb.
    std::vector<float> xs(static_cast<size_t>(p_.seq * B * p_.input)), xw(static_cast<size_t>(p_.seq * B * gh));
    for (int64_t s = 0; s < p_.seq; ++s)
      for (int64_t b = 0; b < B; ++b) std::copy_n(t_.x + x_at(s, b), p_.input, xs.begin() + (s * B + b) * p_.input);
    gemm_into(xs.data(), p_.seq * B, p_.input, w_, gh, wb_.data(), xw.data());
    std::vector<float> hr(static_cast<size_t>(B * gh)), rh(static_cast<size_t>(B * p_.hidden));
    for (int64_t k = 0; k < p_.seq; ++k) {
      const int64_t s = reverse() ? p_.seq - 1 - k : k;
      gemm_into(h_.data(), B, p_.hidden, r_, gh, rb_.data(), hr.data());
      if (p_.kind == RnnKind::kGru && !p_.linear_before_reset) reset_hidden(xw, hr, s, &rh);
      for (int64_t b = 0; b < B; ++b) step(b, s, xw.data() + (s * B + b) * gh, hr.data() + b * gh, rh);
    }
    finish();
  }

 private:
  bool reverse() const { return p_.reverse || d_ == 1; }
  int64_t len(int64_t b) const {
    if (!t_.lens) return p_.seq;
    return t_.lens_i32 ? static_cast<const int32_t*>(t_.lens)[b] : static_cast<const int64_t*>(t_.lens)[b];
  }
  int64_t x_at(int64_t s, int64_t b) const { return (p_.batch_major ? b * p_.seq + s : s * p_.batch + b) * p_.input; }
  int64_t y_at(int64_t s, int64_t b) const {  // [S, D, B, H] or [B, S, D, H]
    return (p_.batch_major ? (b * p_.seq + s) * p_.dirs + d_ : (s * p_.dirs + d_) * p_.batch + b) * p_.hidden;
  }
  int64_t state_at(int64_t b) const { return (p_.batch_major ? b * p_.dirs + d_ : d_ * p_.batch + b) * p_.hidden; }
  float clip(float v) const { return p_.clip > 0 ? std::clamp(v, -p_.clip, p_.clip) : v; }

  // out[m, n] = a[m, k] b[n, k]^T + bias[n].
  static void gemm_into(const float* a, int64_t m, int64_t k, const float* b, int64_t n, const float* bias,
                        float* out) {
    GemmParams gp;
    gp.m = m;
    gp.n = n;
    gp.k = k;
    gp.trans_b = true;
    gp.c_rows = 1;
    gp.c_cols = n;
    gemm(gp, a, b, bias, out);
  }

  // GRU without linear_before_reset: rh[b] = (r_t . H[b]) Rh^T + Rbh, r_t from this step's gates.
  void reset_hidden(const std::vector<float>& xw, const std::vector<float>& hr, int64_t s, std::vector<float>* rh) {
    const int64_t H = p_.hidden, gh = 3 * H, B = p_.batch;
    std::vector<float>& rx = rx_;  // r_t . H[b], reused across steps
    rx.resize(static_cast<size_t>(B * H));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < H; ++j) {
        const float r = rnn_activate(acts_[0], clip(xw[static_cast<size_t>((s * B + b) * gh + H + j)] +
                                                    hr[static_cast<size_t>(b * gh + H + j)]));
        rx[static_cast<size_t>(b * H + j)] = r * h_[static_cast<size_t>(b * H + j)];
      }
    gemm_into(rx.data(), B, H, r_ + 2 * H * H, H, rb_.data() + 2 * H, rh->data());
  }

  void step(int64_t b, int64_t s, const float* xw, const float* hr, const std::vector<float>& rh) {
    const int64_t H = p_.hidden;
    float* y = t_.y ? t_.y + y_at(s, b) : nullptr;
    if (s >= len(b)) {  // past this sequence: y is 0, the state holds
      if (y) std::fill(y, y + H, 0.f);
      return;
    }
    float* h = h_.data() + b * H;
    float* c = c_.data() + b * H;
    for (int64_t j = 0; j < H; ++j) {
      if (p_.kind == RnnKind::kRnn) {
        h[j] = rnn_activate(acts_[0], clip(xw[j] + hr[j]));
      } else if (p_.kind == RnnKind::kGru) {
        const float z = rnn_activate(acts_[0], clip(xw[j] + hr[j]));
        const float r = rnn_activate(acts_[0], clip(xw[H + j] + hr[H + j]));
        const float pre = p_.linear_before_reset ? xw[2 * H + j] + r * hr[2 * H + j]
                                                 : xw[2 * H + j] + rh[static_cast<size_t>(b * H + j)];
        const float hh = rnn_activate(acts_[1], clip(pre));
        h[j] = (1.f - z) * hh + z * h[j];
      } else {
        const float* pp = t_.p ? t_.p + d_ * 3 * H : nullptr;
        const float i = rnn_activate(acts_[0], clip(xw[j] + hr[j] + (pp ? pp[j] * c[j] : 0.f)));
        const float f =
            p_.input_forget
                ? 1.f - i
                : rnn_activate(acts_[0], clip(xw[2 * H + j] + hr[2 * H + j] + (pp ? pp[2 * H + j] * c[j] : 0.f)));
        const float cc = rnn_activate(acts_[1], clip(xw[3 * H + j] + hr[3 * H + j]));
        c[j] = f * c[j] + i * cc;
        const float o = rnn_activate(acts_[0], clip(xw[H + j] + hr[H + j] + (pp ? pp[H + j] * c[j] : 0.f)));
        h[j] = o * rnn_activate(acts_[2], c[j]);
      }
    }
    if (y) std::copy(h, h + H, y);
  }

  // Y_h and Y_c: the last state of each sequence; 0 for a sequence of length 0, as ONNX Runtime.
  void finish() {
    for (int64_t b = 0; b < p_.batch; ++b) {
      const int64_t at = state_at(b);
      if (len(b) == 0) {
        std::fill_n(h_.data() + b * p_.hidden, p_.hidden, 0.f);
        std::fill_n(c_.data() + b * p_.hidden, p_.hidden, 0.f);
      }
      if (t_.yh) std::copy_n(h_.data() + b * p_.hidden, p_.hidden, t_.yh + at);
      if (t_.yc) std::copy_n(c_.data() + b * p_.hidden, p_.hidden, t_.yc + at);
    }
  }

  const RnnParams& p_;
  const RnnTensors& t_;
  int d_;
  const float *w_, *r_;
  const RnnActivation* acts_;
  std::vector<float> wb_, rb_, h_, c_, rx_;
};

}  // namespace

void rnn(const RnnParams& p, const RnnTensors& t) {
  for (int d = 0; d < p.dirs; ++d) Direction(p, t, d).run();
}

}  // namespace fusert::cpu
