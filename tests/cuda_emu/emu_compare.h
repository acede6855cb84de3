// Shared by the emulated-device op tests (tests/cuda_emu/test_emu_*.cc): a YAML model written to a
// temporary file, run on the CPU backend and on the emulated CUDA device (fusion none and all, twice
// each), every output compared, the host-fallback count and the emulation's violations checked.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "runtime/session.h"
#include "tests/cuda_emu/emu.h"

namespace fusert::emutest {

/// `text` written to a temporary "fusert_emu_<stem>_<pid>.yaml"; its path.
inline std::string write_model(const std::string& stem, const char* text) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("fusert_emu_" + stem + "_" + std::to_string(::getpid()) + ".yaml"))
          .string();
  std::ofstream(path) << text;
  return path;
}

inline double rel_l2(const Tensor& got, const Tensor& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = static_cast<double>(got.f32()[i]) - want.f32()[i];
    num += d * d;
    den += static_cast<double>(want.f32()[i]) * want.f32()[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

inline bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

/// The model at `path` (options `co`, device cpu) on `in`, then on the emulated device in fusion
/// none and all, twice each: every output of the same shape and dtype, f32 outputs within relative
/// L2 `tol_of(name)` (0: to the bit), the others to the bit; `host_steps` host-fallback steps; no
/// emulation violation. Returns the last device run's outputs.
inline TensorMap check_on_device(const std::string& path, const SessionOptions& co, const TensorMap& in,
                                 const std::function<double(const std::string&)>& tol_of, int host_steps = 0) {
  auto cpu = Session::load(path, co);
  REQUIRE_MESSAGE(cpu.ok(), cpu.status().to_string());
  auto want = (*cpu)->run(in);
  REQUIRE_MESSAGE(want.ok(), want.status().to_string());
  emu::clear_violations();
  TensorMap last;
  for (const char* fusion : {"none", "all"}) {
    CAPTURE(fusion);
    SessionOptions go = co;
    go.device = "cuda";
    go.fusion = fusion;
    auto gpu = Session::load(path, go);
    REQUIRE_MESSAGE(gpu.ok(), gpu.status().to_string());
    CHECK((*gpu)->stats().host_fallback_steps == host_steps);
    for (int rep = 0; rep < 2; ++rep) {  // a stale or uninitialised buffer shows on the second run
      auto got = (*gpu)->run(in);
      REQUIRE_MESSAGE(got.ok(), got.status().to_string());
      for (const auto& [name, t] : *want) {
        CAPTURE(name);
        const Tensor& g = got->at(name);
        REQUIRE(g.shape() == t.shape());
        REQUIRE(g.dtype() == t.dtype());
        const double tol = t.dtype() == DType::kF32 ? tol_of(name) : 0.0;
        if (tol == 0)
          CHECK(same_bits(g, t));
        else
          CHECK(rel_l2(g, t) <= tol);
      }
      last = std::move(*got);
    }
  }
  CHECK(emu::violations().empty());
  return last;
}

}  // namespace fusert::emutest
