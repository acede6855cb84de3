// A third backend, kept out of the library, that proves the plug-in seam (runtime/backend.h):
// "ref" runs every step on the reference CPU kernels, fuses only what it declares it can (single
// ops, anchor + epilogue and elementwise chains), prices merges on a machine of its own, and
// owns its options. Adding it touched this folder and tests/CMakeLists.txt only: it registers
// itself with register_backend(), and the session, planner and apps take it from the registry.
#pragma once

#include "runtime/backend.h"

namespace fusert::plugin {

/// The registry entry of "ref" (name, summary, roofline, option check, factory).
const BackendInfo& ref_backend_info();

/// The roofline "ref" hands the planner: deliberately unlike the CPU's, so a test can see
/// that the planner prices with it.
constexpr Roofline kRefRoofline{1e9, 1e9, 50.0};

}  // namespace fusert::plugin
