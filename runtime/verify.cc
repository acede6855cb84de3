// Group-by-group verification of a fused plan against the unfused path.
#include "runtime/verify.h"

#include <cmath>
#include <cstring>

#include "graph/fusion/planner.h"
#include "runtime/cpu/lower_cpu.h"

namespace fusert {

namespace {

// Every value in its own buffer (no reuse), so all intermediates stay readable.
class MapTable : public BufferTable {
 public:
  explicit MapTable(const Graph& g) : g_(g), bufs_(g.values.size()) {}
  void* raw(ValueId id) const override {
    const Value& v = g_.value(id);
    if (v.is_initializer) return const_cast<void*>(v.data.raw());
    Tensor& t = bufs_[static_cast<size_t>(id)];
    if (t.empty()) t = Tensor(v.dtype, v.shape);
    return t.raw();
  }
  float* f32(ValueId id) const override { return static_cast<float*>(raw(id)); }
  Tensor& tensor(ValueId id) {
    raw(id);
    return bufs_[static_cast<size_t>(id)];
  }
  void set(ValueId id, Tensor t) { bufs_[static_cast<size_t>(id)] = std::move(t); }

 private:
  const Graph& g_;
  mutable std::vector<Tensor> bufs_;
};

// Copies a 4-D NCHW tensor into the native layout `strides` (NativeLayout: dense, or channel-
// blocked with the block size last) (to_native), or back.
// Any element size (f32, and the int8 activations the layout pass keeps in NHWC too).
Tensor permute_layout(const Tensor& t, const std::vector<int64_t>& strides, bool to_native) {
  const int64_t b = strides.size() == 5 ? strides[4] : 1;
  const size_t es = dtype_size(t.dtype());
  Tensor out(t.dtype(), t.shape());
  const auto* src = static_cast<const unsigned char*>(t.raw());
  auto* dst = static_cast<unsigned char*>(out.raw());
  const Shape& d = t.shape();
  int64_t i = 0;
  for (int64_t n = 0; n < d[0]; ++n)
    for (int64_t c = 0; c < d[1]; ++c)
      for (int64_t h = 0; h < d[2]; ++h)
        for (int64_t w = 0; w < d[3]; ++w, ++i) {
          const int64_t j = n * strides[0] + (c / b) * strides[1] + h * strides[2] + w * strides[3] + c % b;
          const int64_t from = to_native ? i : j, to = to_native ? j : i;
          std::memcpy(dst + static_cast<size_t>(to) * es, src + static_cast<size_t>(from) * es, es);
        }
  return out;
}

}  // namespace

Result<std::vector<GroupCheck>> verify_groups(Session& s, const TensorMap& inputs) {
  if (s.stats().execution_stages > 1) {
    return error(StatusCode::kUnsupported)
           << "--verify: " << s.model().path << " runs in " << s.stats().execution_stages
           << " execution stages (an output size that depends on the "
           << "data, or an If decided at run time); --verify checks a plan of one stage";
  }
  const Graph& g = s.graph();
  FusionOptions none;
  none.enabled.clear();
  FUSERT_ASSIGN_OR_RETURN(FusionPlan plan, plan_fusion(g, none));
  FUSERT_ASSIGN_OR_RETURN(std::vector<Step> unfused, lower_plan_cpu(g, plan));
  MapTable ref(g);
  for (ValueId id : g.inputs) {
    auto it = inputs.find(g.value(id).name);
    if (it == inputs.end()) return error(StatusCode::kInvalidArgument) << "missing input '" << g.value(id).name << "'";
    if (it->second.shape() != g.value(id).shape || it->second.dtype() != g.value(id).dtype) {
      // The plan checked is the session's own, made at the load-time shape (a symbolic dim's opt).
      return error(StatusCode::kInvalidArgument)
             << "verify: input '" << g.value(id).name << "' is " << shape_str(it->second.shape())
             << "; the fused groups are checked at the session's planned shape " << shape_str(g.value(id).shape)
             << " (fix the shape with --shape, or pass an input of that shape)";
    }
    ref.set(id, it->second.clone());
  }
  for (const Step& st : unfused) {
    if (st.check) FUSERT_RETURN_IF_ERROR(st.check(ref));
    if (st.alias_of != kNoValue) {
      Tensor& src = ref.tensor(st.alias_of);
      std::memcpy(ref.raw(st.outputs[0]), src.raw(), src.nbytes());
    } else if (st.run) {
      st.run(ref);
    }
  }
  std::vector<GroupCheck> out;
  for (const Step& st : s.plan().steps) {
    if (st.nodes.size() < 2 || !st.run) continue;
    MapTable mine(g);
    const NativeLayout* nl = st.native.get();  // buffers the layout pass keeps in oneDNN's layout
    for (ValueId in : st.inputs) {
      if (g.value(in).is_initializer) continue;
      const NativeLayout::Read* native = nullptr;
      for (size_t k = 0; nl && k < nl->reads.size(); ++k)
        if (nl->reads[k].used && nl->reads[k].value == in) native = &nl->reads[k];
      mine.set(in, native ? permute_layout(ref.tensor(in), native->strides, true) : ref.tensor(in).clone());
    }
    st.run(mine);
    if (nl && nl->output_used) mine.set(nl->output, permute_layout(mine.tensor(nl->output), nl->output_strides, false));
    GroupCheck c;
    c.group = st.name;
    c.kernel = st.kernel;
    c.nodes = static_cast<int>(st.nodes.size());
    double num = 0, den = 0;
    for (ValueId o : st.outputs) {
      const Tensor& a = mine.tensor(o);
      const Tensor& b = ref.tensor(o);
      for (int64_t i = 0; i < a.numel() && a.dtype() == DType::kF32; ++i) {
        double x = a.f32()[i], y = b.f32()[i];
        if (std::isfinite(x) != std::isfinite(y) || std::isnan(x) != std::isnan(y)) {
          c.nan_mismatch = true;
          continue;
        }
        if (!std::isfinite(x)) continue;
        c.max_abs = std::max(c.max_abs, std::fabs(x - y));
        num += (x - y) * (x - y);
        den += y * y;
      }
    }
    c.rel_l2 = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
    out.push_back(c);
  }
  return out;
}

}  // namespace fusert
