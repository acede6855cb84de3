// A Loop run between execution stages (runtime/staged.h; the op Loop, graph/onnx/onnx_loop.h):
// its body a session of its own at the carried and outer values' shapes, run once per iteration
// while the iteration number is below M and the condition holds. The carried values keep their
// shapes (the import checked that at its shapes; a run checks every iteration); the scan outputs
// are the iterations' values stacked along a new first axis, whose length is the Loop's count.
#include <algorithm>
#include <cstring>

#include "graph/data_dependent.h"

#include "runtime/staged_internal.h"

namespace fusert {

namespace {

Tensor scalar_i64(int64_t v) {
  Tensor t(DType::kI64, {});
  t.i64()[0] = v;
  return t;
}

Tensor scalar_bool(bool v) {
  Tensor t(DType::kBool, {});
  static_cast<uint8_t*>(t.raw())[0] = v ? 1 : 0;
  return t;
}

// `parts` (each of shape `elem`) stacked along a new first axis.
Tensor stacked(const std::vector<Tensor>& parts, const Shape& elem, DType dtype) {
  Shape s = elem;
  s.insert(s.begin(), static_cast<int64_t>(parts.size()));
  Tensor out(dtype, s);
  const size_t bytes = static_cast<size_t>(shape_numel(elem)) * dtype_size(dtype);
  for (size_t i = 0; i < parts.size() && bytes > 0; ++i)
    std::memcpy(static_cast<uint8_t*>(out.raw()) + i * bytes, parts[i].raw(), bytes);
  return out;
}

}  // namespace

Result<std::vector<Tensor>> StagedModel::run_loop(const DDOp& op, const std::vector<const Tensor*>& x,
                                                  DimValues* dims) const {
  const Node& n = op.node;
  const std::string where = n.loc.str() + ": " + op.label + ": ";
  const size_t carried = static_cast<size_t>(n.attr_i("carried"));
  bool limited = false;  // no M: no limit
  int64_t trips = 0;
  bool cond = true;
  if (!x.empty() && x[0]) {
    if (x[0]->numel() != 1 || x[0]->dtype() != DType::kI64)
      return error(StatusCode::kInvalidArgument) << where << "the trip count M is not one int64";
    limited = true;
    trips = std::max<int64_t>(0, x[0]->i64()[0]);  // a negative M runs no iteration (as ONNX Runtime)
  }
  const std::vector<int64_t>& from = n.attr_ints("trips_from");  // a Scan: M is its inputs' common length
  std::string length_of;
  if (!from.empty()) limited = false;  // M was the length at the import's shapes
  for (size_t p = 0; p + 1 < from.size(); p += 2) {
    const size_t k = static_cast<size_t>(from[p]);
    const int64_t axis = from[p + 1];
    if (k >= x.size() || !x[k] || axis < 0 || axis >= static_cast<int64_t>(x[k]->shape().size()))
      return error(StatusCode::kInternal) << where << "scan input " << k << " missing";
    const int64_t len = x[k]->shape()[static_cast<size_t>(axis)];
    if (limited && len != trips) {
      return error(StatusCode::kInvalidArgument)
             << where << "scan inputs of different lengths: '" << op.in[k] << "' has " << len << " along axis " << axis
             << ", '" << length_of << "' " << trips;
    }
    limited = true;
    trips = len;
    length_of = op.in[k];
  }
  if (x.size() > 1 && x[1]) {
    if (x[1]->numel() != 1 || x[1]->dtype() != DType::kBool)
      return error(StatusCode::kInvalidArgument) << where << "the condition is not one bool";
    cond = static_cast<const uint8_t*>(x[1]->raw())[0] != 0;
  }
  if (carried > 0 && x.size() < 2 + carried) return error(StatusCode::kInternal) << where << "carried values missing";
  std::vector<DType> dtypes;  // the outputs' (carried, then scans), as the import found them
  for (int64_t t : n.attr_ints("out_dtypes")) dtypes.push_back(static_cast<DType>(t));
  TensorMap feed;
  for (size_t k = 2 + carried; k < x.size(); ++k) feed[op.in[k]] = *x[k];
  for (size_t j = 0; j < carried; ++j) feed[loop_body_input(2 + j)] = *x[2 + j];
  feed[loop_body_input(0)] = scalar_i64(0);
  feed[loop_body_input(1)] = scalar_bool(cond);
  const size_t scans = dtypes.size() > carried ? dtypes.size() - carried : 0;
  std::vector<std::vector<Tensor>> scanned(scans);
  std::shared_ptr<SessionImpl> body;  // one session: the shapes it is fed stay those of the start
  int64_t i = 0;
  for (; (!limited || i < trips) && cond; ++i) {
    if (!body) {
      FUSERT_ASSIGN_OR_RETURN(body, subgraph(op, "body_model", feed));
    }
    feed[loop_body_input(0)] = scalar_i64(i);
    FUSERT_ASSIGN_OR_RETURN(TensorMap res, body->run(feed));
    const Graph& bg = body->model().graph;
    auto out = [&](size_t k) -> const Tensor& { return res.at(bg.value(bg.outputs[k]).name); };
    const Tensor& c = out(0);
    if (c.numel() != 1 || c.dtype() != DType::kBool)
      return error(StatusCode::kInvalidArgument)
             << where << "iteration " << i << ": the body's condition is " << dtype_name(c.dtype()) << " "
             << shape_str(c.shape()) << " (one bool)";
    cond = static_cast<const uint8_t*>(c.raw())[0] != 0;
    for (size_t j = 0; j < carried; ++j) {
      const Tensor& t = out(1 + j);
      const Tensor& was = feed[loop_body_input(2 + j)];
      if (t.shape() != was.shape() || t.dtype() != was.dtype()) {
        return error(StatusCode::kUnsupported)
               << where << "iteration " << i << ": carried value " << j << " leaves the body as "
               << dtype_name(t.dtype()) << " " << shape_str(t.shape()) << ", not " << dtype_name(was.dtype()) << " "
               << shape_str(was.shape()) << "; fusert runs a Loop whose carried values keep their shape and dtype";
      }
      feed[loop_body_input(2 + j)] = t;
    }
    for (size_t k = 0; k < scans; ++k) {
      const Tensor& t = out(1 + carried + k);
      const Tensor* first = scanned[k].empty() ? nullptr : &scanned[k][0];
      if (t.dtype() != dtypes[carried + k] || (first && t.shape() != first->shape())) {
        return error(StatusCode::kUnsupported)
               << where << "iteration " << i << ": scan output " << k << " is " << dtype_name(t.dtype()) << " "
               << shape_str(t.shape()) << ", in iteration 0 "
               << dtype_name(first ? first->dtype() : dtypes[carried + k]) << " "
               << shape_str(first ? first->shape() : Shape{}) << "; fusert stacks scan values of one shape";
      }
      scanned[k].push_back(t);
    }
  }
  std::vector<Shape> elem(scans);  // a scan value's shape: iteration 0's, else the body's at these shapes
  for (size_t k = 0; k < scans; ++k) {
    if (!scanned[k].empty()) {
      elem[k] = scanned[k][0].shape();
      continue;
    }
    if (!body) {
      FUSERT_ASSIGN_OR_RETURN(body, subgraph(op, "body_model", feed));
    }
    const Graph& bg = body->model().graph;
    elem[k] = bg.value(bg.outputs[1 + carried + k]).shape;
  }
  std::vector<Tensor> result;
  for (size_t j = 0; j < carried && j < dtypes.size(); ++j) result.push_back(feed[loop_body_input(2 + j)]);
  for (size_t k = 0; k < scans; ++k) result.push_back(stacked(scanned[k], elem[k], dtypes[carried + k]));
  if (!op.dims.empty()) (*dims)[op.dims[0]] = i;
  return result;
}

}  // namespace fusert
