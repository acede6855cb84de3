// Shape functions of the recurrent ops RNN, GRU and LSTM (ONNX opset 14 semantics): X [S, B, I]
// (layout 1: [B, S, I]), W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H], sequence_lens [B] (i32,
// i64), initial_h / initial_c [D, B, H] ([B, D, H]), P [D, 3*H]; hidden_size from R when 0.
#include "graph/shape_inference.h"

namespace fusert {

namespace {

Status check_input(ShapeContext& c, size_t i, const char* what, const Shape& want) {
  if (!c.has_input(i)) return Status();
  if (c.in_dtype(i) != DType::kF32) return c.unsupported() << what << " is " << dtype_name(c.in_dtype(i)) << " (f32)";
  if (c.in(i) != want) return c.fail() << what << " " << shape_str(c.in(i)) << ", expected " << shape_str(want);
  return Status();
}

Status recurrent_shape(ShapeContext& c, int64_t gates) {
  Node& n = c.node;
  const Shape& x = c.in(0);
  if (x.size() != 3) return c.fail() << "X " << shape_str(x) << " is not rank 3";
  if (c.in_dtype(0) != DType::kF32) return c.unsupported() << "X is " << dtype_name(c.in_dtype(0)) << " (f32)";
  const std::string& dir = n.attr_s("direction");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return c.fail() << "direction '" << dir << "' (forward, reverse, bidirectional)";
  const int64_t d = dir == "bidirectional" ? 2 : 1;
  const bool batch_major = n.attr_i("layout") != 0;
  const int64_t s = batch_major ? x[1] : x[0], b = batch_major ? x[0] : x[1], in = x[2];
  const Shape& r = c.in(2);
  int64_t h = n.attr_i("hidden_size");
  if (h == 0 && r.size() == 3) h = r[2];
  if (h < 1 || h > (int64_t{1} << 24)) return c.fail() << "hidden_size " << h;
  n.attrs["hidden_size"].i = h;
  FUSERT_RETURN_IF_ERROR(check_input(c, 1, "W", {d, gates * h, in}));
  FUSERT_RETURN_IF_ERROR(check_input(c, 2, "R", {d, gates * h, h}));
  FUSERT_RETURN_IF_ERROR(check_input(c, 3, "B", {d, 2 * gates * h}));
  if (c.has_input(4)) {
    if (c.in_dtype(4) != DType::kI32 && c.in_dtype(4) != DType::kI64)
      return c.fail() << "sequence_lens is " << dtype_name(c.in_dtype(4)) << " (i32)";
    if (c.in(4) != Shape{b}) return c.fail() << "sequence_lens " << shape_str(c.in(4)) << ", expected [" << b << "]";
  }
  const Shape state = batch_major ? Shape{b, d, h} : Shape{d, b, h};
  FUSERT_RETURN_IF_ERROR(check_input(c, 5, "initial_h", state));
  if (gates == 4) {
    FUSERT_RETURN_IF_ERROR(check_input(c, 6, "initial_c", state));
    FUSERT_RETURN_IF_ERROR(check_input(c, 7, "P", {d, 3 * h}));
  }
  const double clip = n.attr_f("clip");
  if (clip < 0) return c.fail() << "clip " << clip << " is negative";
  c.set_out(0, batch_major ? Shape{b, s, d, h} : Shape{s, d, b, h});
  for (size_t k = 1; k < n.outputs.size(); ++k) c.set_out(k, state);
  return Status();
}

}  // namespace

Status shape_RNN(ShapeContext& c) { return recurrent_shape(c, 1); }
Status shape_GRU(ShapeContext& c) { return recurrent_shape(c, 3); }
Status shape_LSTM(ShapeContext& c) { return recurrent_shape(c, 4); }

}  // namespace fusert
