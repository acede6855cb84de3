// The ops a staged model runs on the host between its stages (runtime/staged.h): the
// data-dependent ops on their host kernels (kernels/cpu/data_dependent.h), an If's branch taken
// as a session of its own, a Loop (runtime/staged_loop.cc).
#include <cstdlib>
#include <functional>

#include "graph/base/range.h"
#include "graph/base/target_shape.h"
#include "graph/onnx/onnx_import.h"
#include "kernels/cpu/data_dependent.h"
#include "kernels/cpu/data_movement.h"
#include "runtime/staged_internal.h"

namespace fusert {

namespace {

constexpr int64_t kNoAxis = 2147483647;  // Unique / Compress without `axis`

// DynamicReshape / DynamicExpand of `x` to `shape` (one i64 per output dim, read at run time):
// ONNX Reshape's 0 (X's dim, unless allowzero) and -1 (the rest), Expand's broadcast. Errors
// (naming the node by `where`): kInvalidArgument, a shape that does not fit X or an expansion
// of more than `max_bytes`; kIoError, memory for it not available.
Result<Tensor> computed_shape_op(const Node& n, const Tensor& x, const Tensor& shape, const std::string& where,
                                 int64_t max_bytes) {
  std::vector<int64_t> t(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < t.size(); ++i)
    t[i] = shape.dtype() == DType::kI32 ? static_cast<const int32_t*>(shape.raw())[i] : shape.i64()[i];
  Shape y;
  Status fit = n.op == OpKind::kDynamicReshape ? reshape_to(x.shape(), t, n.attr_i("allowzero") != 0, &y)
                                               : expand_to(x.shape(), t, &y);
  if (!fit.ok()) return error(StatusCode::kInvalidArgument) << where << fit.message();
  if (n.op == OpKind::kDynamicReshape) return x.reshaped(y);  // shares X's buffer, as Reshape
  const int64_t bytes = shape_numel(y) * static_cast<int64_t>(dtype_size(x.dtype()));
  if (bytes > max_bytes)
    return error(StatusCode::kInvalidArgument)
           << where << "the expansion to " << shape_str(y) << " is " << bytes
           << " bytes, more than SessionOptions::max_activation_bytes (" << max_bytes << ")";
  void* p = bytes > 0 ? std::aligned_alloc(64, static_cast<size_t>((bytes + 63) / 64 * 64)) : nullptr;
  if (bytes > 0 && !p) return error(StatusCode::kIoError) << where << "out of memory allocating " << bytes << " bytes";
  Tensor out = bytes > 0 ? Tensor::view(x.dtype(), y, p, std::shared_ptr<void>(p, std::free)) : Tensor(x.dtype(), y);
  if (bytes > 0) cpu::expand_rows(x.shape(), y, dtype_size(x.dtype()), x.raw(), out.raw());
  return out;
}

}  // namespace

// The subgraph of `op` serialized in its attribute `model` (an If's branch, a Loop's body) as a
// session at these inputs' shapes (built on first use, then kept: one per subgraph and shape).
Result<std::shared_ptr<SessionImpl>> StagedModel::subgraph(const DDOp& op, const std::string& model,
                                                           const TensorMap& in) const {
  std::map<std::string, Shape> shapes;
  const std::string& bytes = op.node.attr_s(model);  // differs per dims where it reads a shape
  std::string key = op.node.name + "/" + model + " " + std::to_string(std::hash<std::string>()(bytes));
  for (const auto& [name, t] : in) {
    shapes[name] = t.shape();
    key += " " + name + shape_str(t.shape());
  }
  std::lock_guard<std::mutex> lock(branch_mu_);
  auto it = branches_.find(key);
  if (it != branches_.end()) return it->second;
  const std::string part = model == "then_model" ? "then_branch" : model == "else_model" ? "else_branch" : "body";
  const std::string where = path_ + ": " + op.label + " " + part;
  FUSERT_ASSIGN_OR_RETURN(ModelSpec spec, load_onnx_bytes(bytes, where, shapes));
  FUSERT_ASSIGN_OR_RETURN(std::unique_ptr<SessionImpl> s, SessionImpl::open_spec(std::move(spec), options_));
  std::shared_ptr<SessionImpl> shared(std::move(s));
  branches_[key] = shared;
  return shared;
}

Result<std::vector<Tensor>> StagedModel::run_dd(const DDOp& op, const TensorMap& env, DimValues* dims) const {
  std::vector<const Tensor*> x(op.in.size(), nullptr);
  for (size_t k = 0; k < op.in.size(); ++k) {
    if (!op.fixed[k].empty() && !op.follows[k]) {
      x[k] = &op.fixed[k];
    } else if (!op.in[k].empty()) {
      auto it = env.find(op.in[k]);
      if (it == env.end()) return error(StatusCode::kInternal) << op.label << ": input '" << op.in[k] << "' missing";
      x[k] = &it->second;
    }
  }
  const Node& n = op.node;
  const std::string where = n.loc.str() + ": " + op.label + ": ";
  auto scalar = [&](size_t k, double dflt) -> double {
    if (k >= x.size() || !x[k] || x[k]->numel() < 1) return dflt;
    const Tensor& t = *x[k];
    return t.dtype() == DType::kF32 ? t.f32()[0] : t.dtype() == DType::kI64 ? static_cast<double>(t.i64()[0]) : 0.0;
  };
  std::vector<Tensor> out;
  int64_t count = 0;
  switch (n.op) {
    case OpKind::kNonZero:
      out.push_back(cpu::non_zero(*x[0]));
      count = out[0].shape()[1];
      break;
    case OpKind::kNonMaxSuppression: {
      cpu::NmsParams p;
      p.max_per_class = std::max<int64_t>(0, static_cast<int64_t>(scalar(2, 0)));
      p.iou_threshold = static_cast<float>(scalar(3, 0));
      p.has_score_threshold = x.size() > 4 && x[4];
      p.score_threshold = static_cast<float>(scalar(4, 0));
      p.center_point_box = n.attr_i("center_point_box") != 0;
      if (!(p.iou_threshold >= 0 && p.iou_threshold <= 1))
        return error(StatusCode::kInvalidArgument)
               << where << "iou_threshold " << p.iou_threshold << " is outside [0, 1]";
      out.push_back(cpu::non_max_suppression(*x[0], *x[1], p));
      count = out[0].shape()[0];
      break;
    }
    case OpKind::kUnique: {
      const int64_t axis = n.attr_i("axis");
      cpu::UniqueResult r = cpu::unique(*x[0], axis == kNoAxis ? -1 : axis, n.attr_i("sorted") != 0);
      count = r.indices.numel();
      out = {r.y, r.indices, r.inverse, r.counts};
      break;
    }
    case OpKind::kCompress: {
      const int64_t axis = n.attr_i("axis");
      out.push_back(cpu::compress(*x[0], *x[1], axis == kNoAxis ? -1 : axis));
      count = axis == kNoAxis ? out[0].numel() : out[0].shape()[static_cast<size_t>(axis)];
      break;
    }
    case OpKind::kIf: {
      const Tensor& c = *x[0];
      if (c.numel() != 1) return error(StatusCode::kInvalidArgument) << where << "the condition is not one bool";
      const bool taken = static_cast<const uint8_t*>(c.raw())[0] != 0;
      TensorMap in;
      for (size_t k = 1; k < x.size(); ++k) in[op.in[k]] = *x[k];
      FUSERT_ASSIGN_OR_RETURN(std::shared_ptr<SessionImpl> b, subgraph(op, taken ? "then_model" : "else_model", in));
      FUSERT_ASSIGN_OR_RETURN(TensorMap res, b->run(in));
      for (ValueId o : b->model().graph.outputs) out.push_back(res.at(b->model().graph.value(o).name));
      return out;
    }
    case OpKind::kLoop:
      return run_loop(op, x, dims);
    case OpKind::kDynamicSlice: {
      auto value = [&](size_t k, int64_t dflt) -> int64_t {
        if (k >= x.size() || !x[k]) return dflt;
        return x[k]->dtype() == DType::kI32 ? static_cast<const int32_t*>(x[k]->raw())[0] : x[k]->i64()[0];
      };
      const int64_t step = value(4, 1);
      if (step == 0) return error(StatusCode::kInvalidArgument) << where << "step 0";
      out.push_back(cpu::slice_axis(*x[0], n.attr_i("axis"), value(1, 0), value(2, 0), step));
      count = out[0].shape()[static_cast<size_t>(n.attr_i("axis"))];
      break;
    }
    case OpKind::kDynamicReshape:
    case OpKind::kDynamicExpand: {
      FUSERT_ASSIGN_OR_RETURN(Tensor y, computed_shape_op(n, *x[0], *x[1], where, options_.max_activation_bytes));
      for (size_t k = 0; k < op.dims.size(); ++k) (*dims)[op.dims[k]] = y.shape()[k];
      out.push_back(std::move(y));
      return out;
    }
    case OpKind::kRange: {
      FUSERT_ASSIGN_OR_RETURN(Tensor y, range_tensor(*x[0], *x[1], *x[2], where + "Range"));
      count = y.numel();
      out.push_back(std::move(y));
      break;
    }
    case OpKind::kTopK: {
      const Tensor& kt = *x[1];
      const int64_t k = kt.dtype() == DType::kI32 ? static_cast<const int32_t*>(kt.raw())[0] : kt.i64()[0];
      const int64_t axis = n.attr_i("axis");
      const int64_t len = x[0]->shape()[static_cast<size_t>(axis)];
      if (k < 0 || k > len)
        return error(StatusCode::kInvalidArgument) << where << "K = " << k << " is outside [0, " << len << "] (dim "
                                                   << axis << " of " << shape_str(x[0]->shape()) << ")";
      Tensor v, i;
      cpu::top_k_tensor(*x[0], axis, k, n.attr_i("largest") != 0, &v, &i);
      out = {v, i};
      count = k;
      break;
    }
    default:
      return error(StatusCode::kInternal) << op.label << " is not a data-dependent op";
  }
  (*dims)[op.dims.at(0)] = count;
  return out;
}

}  // namespace fusert
