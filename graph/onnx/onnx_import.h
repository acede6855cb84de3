// ONNX models into fusert's IR (the graph layer's second front end beside the YAML loader):
// a ModelProto parsed by the ONNX project's own protobuf library (Debian libonnx-dev), its
// initializers and Constant nodes as constants, its nodes mapped onto the op table (ONNX
// opset semantics, the spellings of opsets 1-21), shape subgraphs folded as they are read.
#pragma once

#include <map>
#include <string>

#include "graph/base/tensor.h"
#include "graph/loader/model_loader.h"

namespace fusert {

/// True for a path naming an ONNX file (extension .onnx).
bool is_onnx_path(const std::string& path);

/// Reads the ONNX model at `path`. Inputs whose dims are symbolic (dim_param) or missing take
/// their shape from `input_shapes` (by input name; SessionOptions::input_shapes, `infer
/// --shape`), else a symbolic leading dim is 1 (a batch); any other symbolic dim is an error
/// asking for --shape. Shape/Size/Constant nodes and the integer arithmetic on them are folded
/// at import (shapes are static once bound); Squeeze becomes a Reshape; Dropout an Identity.
/// Errors: kNotFound / kParseError (not a protobuf ModelProto, a tensor whose data does not
/// match its shape, an external-data file missing or short), kUnsupported (one error listing
/// every unsupported op type with its count and first nodes, every unsupported attribute or
/// dtype; opsets outside 1..21; other domains), kInvalidArgument (a symbolic dim without a
/// binding, a binding of the wrong rank), and the shape errors of the model's nodes.
/// `dims`: dim_params kept symbolic (ModelSpec::dims, models/FORMAT.md "Symbolic dimensions"),
/// the model imported at each one's opt; the other values are imported again on demand
/// (ModelSpec::expand_at). A name no input dim carries is kInvalidArgument.
///
/// `open_dims` (sessions, `infer`): every other symbolic input dim (dim_param, -1, 0 or unnamed;
/// an unnamed one is called "<input>.<dim>") stays symbolic too, an open dim (SymbolicDim::open:
/// range 1 .. the tensor limit), bound from the inputs at run(). The model is imported at the
/// first of a few common sizes it imports at (a batch at 1; an image side of a rank-4 input at
/// 224, 256, 320, ..., 640; another dim at 128, 64, ...) and probed at a second size for the
/// constants that follow the dims. When no size imports, the error is the first size's with
/// the sizes named.
///
/// `f64_as_f32` (SessionOptions::f64_as_f32, `infer --f64-as-f32`): a float64 model runs in
/// float32 (its float64 inputs and outputs become float32, Casts to float64 Casts to float32), as
/// OpenVINO's CPU plugin runs one; results differ from a float64 run by float32 rounding. Off,
/// a float64 input is kUnsupported. (Float64 initializers and constants are read as float32
/// either way.)
Result<ModelSpec> load_onnx(const std::string& path, const std::map<std::string, Shape>& input_shapes = {},
                            const std::vector<SymbolicDim>& dims = {}, bool open_dims = false, bool f64_as_f32 = false);

/// A serialized ONNX ModelProto (the branch of a run-time If, runtime/staged.h) read as load_onnx
/// reads a file whose inputs `input_shapes` all bind; `name` stands in for the path in errors.
/// Errors: as load_onnx's; kParseError when `bytes` is no ModelProto.
Result<ModelSpec> load_onnx_bytes(const std::string& bytes, const std::string& name,
                                  const std::map<std::string, Shape>& input_shapes);

/// `--shape` (infer, fusert-convert): "input=1x3x224x224" into (*bindings)["input"] =
/// {1, 3, 224, 224}. Errors: kInvalidArgument quoting `v`.
Status parse_shape_binding(const std::string& v, std::map<std::string, std::vector<int64_t>>* bindings);

/// A serialized ONNX TensorProto (the input_N.pb / output_N.pb files of ONNX's test data) as
/// a Tensor: f32, f16 and bf16 (as f32), f64 (as f32), i64, i32, bool. Errors: kParseError
/// naming the file; kUnsupported for another dtype.
Result<Tensor> read_onnx_tensor(const std::string& path);

}  // namespace fusert
