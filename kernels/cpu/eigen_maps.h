// Internal: row-major Eigen views over raw float buffers, shared by the GEMM-based kernels.
// Maps never copy, so Eigen's blocked (and OpenMP-threaded) GEMM reads the caller's memory.
#pragma once

#include <Eigen/Core>

namespace fusert::cpu::detail {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;

}  // namespace fusert::cpu::detail
