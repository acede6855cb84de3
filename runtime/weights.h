// Weights: the safetensors reader (mmap; f32/f16/bf16 stored, converted to f32), the seeded
// initialisation of models/FORMAT.md, and binding either to a graph's initializers.
#pragma once

#include <map>
#include <string>

#include "graph/base/status.h"
#include "graph/ir.h"

namespace fusert {

/// Reads every tensor of a .safetensors file (format: 8-byte little-endian header size N, an
/// N-byte JSON header {name: {dtype, shape, data_offsets: [begin, end]}}, then the data).
/// Errors name the file and, where one is at fault, the tensor: truncated file, header size
/// past the end, bad JSON, unsupported dtype, offsets outside the data or not matching the shape.
Result<std::map<std::string, Tensor>> read_safetensors(const std::string& path);

/// Writes f32/i64 tensors as .safetensors (used by tests and tools).
Status write_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors);

/// The seeded value tensor of models/FORMAT.md for (name, shape, init, seed). f32.
Tensor seeded_tensor(const std::string& name, const Shape& shape, InitKind init, uint64_t seed);

/// Binds all non-constant initializers of `g` from a safetensors file. Every missing, extra,
/// mis-shaped or mis-typed tensor is listed in one error naming the file. File tensors whose
/// names match a glob in `ignore` (fnmatch syntax, e.g. "pooler.*") are not "extra".
Status bind_weights_from_file(Graph& g, const std::string& path, const std::vector<std::string>& ignore = {});
/// Binds all non-constant initializers with seeded values.
void bind_seeded_weights(Graph& g, uint64_t seed);

}  // namespace fusert
