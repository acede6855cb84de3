// FusionDecision: a yes, or a no that carries its reason (XLA's FusionDecision, Inductor's
// WhyNoFuse). Every refusal the planner makes is one of these, shown by --explain.
#pragma once

#include <sstream>
#include <string>

namespace fusert {

class FusionDecision {
 public:
  static FusionDecision yes() { return FusionDecision(true, "", ""); }
  /// `key` is a short stable category for statistics ("multi_use", "imbalance", ...);
  /// `reason` the full sentence, e.g. "branch FLOP ratio 9.0 > 3.0".
  static FusionDecision no(std::string key, std::string reason) {
    return FusionDecision(false, std::move(key), std::move(reason));
  }
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& key() const { return key_; }
  const std::string& reason() const { return reason_; }

 private:
  FusionDecision(bool ok, std::string key, std::string reason)
      : ok_(ok), key_(std::move(key)), reason_(std::move(reason)) {}
  bool ok_;
  std::string key_, reason_;
};

/// The first "no" among `checks` (callables returning FusionDecision), run in order and no
/// further once one refuses; yes when all agree. A strategy lists its legality and cost rules
/// for one merge in one such call, and the refusal it records carries the first reason.
template <typename... Checks>
FusionDecision first_refusal(Checks&&... checks) {
  FusionDecision d = FusionDecision::yes();
  (void)((d = checks(), d.ok()) && ...);
  return d;
}

/// Builds a reason with stream syntax: `return refuse("imbalance") << "ratio " << r;`.
class RefusalBuilder {
 public:
  explicit RefusalBuilder(std::string key) : key_(std::move(key)) {}
  template <typename V>
  RefusalBuilder& operator<<(const V& v) {
    os_ << v;
    return *this;
  }
  operator FusionDecision() const { return FusionDecision::no(key_, os_.str()); }  // NOLINT

 private:
  std::string key_;
  std::ostringstream os_;
};
inline RefusalBuilder refuse(std::string key) { return RefusalBuilder(std::move(key)); }

}  // namespace fusert
