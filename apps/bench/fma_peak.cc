// The machine's measured FP32 FMA peak, the roofline ceiling cpu_bench.py reports GFLOP/s
// against. Each thread runs 16 independent FMA chains in registers (enough to cover 2 FMA units x
// 4-cycle latency), so the loop is bound by FMA throughput alone. ISA chosen at run time; the
// functions carry their own target attribute, so the build needs no -mavx512f.
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench/serve.h"

namespace fusert::bench {
namespace {

constexpr int kChains = 16;
std::atomic<float> g_sink{0.f};  // keeps the results alive

#define FUSERT_FMA16(FMA, a, b)                                                                                 \
  x0 = FMA(x0, a, b), x1 = FMA(x1, a, b), x2 = FMA(x2, a, b), x3 = FMA(x3, a, b), x4 = FMA(x4, a, b),           \
  x5 = FMA(x5, a, b), x6 = FMA(x6, a, b), x7 = FMA(x7, a, b), x8 = FMA(x8, a, b), x9 = FMA(x9, a, b),           \
  x10 = FMA(x10, a, b), x11 = FMA(x11, a, b), x12 = FMA(x12, a, b), x13 = FMA(x13, a, b), x14 = FMA(x14, a, b), \
  x15 = FMA(x15, a, b)

__attribute__((target("avx512f"))) void chains_avx512(long iters) {
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  // Distinct starting values, so that the compiler cannot merge identical chains into one.
  const float s0 = g_sink.load(std::memory_order_relaxed);
  __m512 x0 = _mm512_set1_ps(s0), x1 = _mm512_set1_ps(s0 + 1), x2 = _mm512_set1_ps(s0 + 2), x3 = _mm512_set1_ps(s0 + 3),
         x4 = _mm512_set1_ps(s0 + 4), x5 = _mm512_set1_ps(s0 + 5), x6 = _mm512_set1_ps(s0 + 6),
         x7 = _mm512_set1_ps(s0 + 7), x8 = _mm512_set1_ps(s0 + 8), x9 = _mm512_set1_ps(s0 + 9),
         x10 = _mm512_set1_ps(s0 + 10), x11 = _mm512_set1_ps(s0 + 11), x12 = _mm512_set1_ps(s0 + 12),
         x13 = _mm512_set1_ps(s0 + 13), x14 = _mm512_set1_ps(s0 + 14), x15 = _mm512_set1_ps(s0 + 15);
  for (long i = 0; i < iters; ++i) FUSERT_FMA16(_mm512_fmadd_ps, a, b);
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x0, x1), _mm512_add_ps(x2, x3)),
                           _mm512_add_ps(_mm512_add_ps(x4, x5), _mm512_add_ps(x6, x7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(x8, x9), _mm512_add_ps(x10, x11)),
                                     _mm512_add_ps(_mm512_add_ps(x12, x13), _mm512_add_ps(x14, x15))));
  alignas(64) float v[16];
  _mm512_store_ps(v, s);  // not _mm512_reduce_add_ps: GCC 12 warns inside it (-Wuninitialized)
  g_sink.store(v[0] + v[15], std::memory_order_relaxed);
}

// 12 chains, not 16: AVX2 has 16 ymm registers, and 16 accumulators plus a and b spill to the
// stack (the loop then measured 53 GFLOP/s on a core where ORT's GEMMs reach 64). 12 still cover
// 2 FMA units x 5-cycle latency.
__attribute__((target("avx2,fma"))) void chains_avx2(long iters) {
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  // Distinct starting values, so that the compiler cannot merge identical chains into one.
  const float s0 = g_sink.load(std::memory_order_relaxed);
  __m256 x0 = _mm256_set1_ps(s0), x1 = _mm256_set1_ps(s0 + 1), x2 = _mm256_set1_ps(s0 + 2), x3 = _mm256_set1_ps(s0 + 3),
         x4 = _mm256_set1_ps(s0 + 4), x5 = _mm256_set1_ps(s0 + 5), x6 = _mm256_set1_ps(s0 + 6),
         x7 = _mm256_set1_ps(s0 + 7), x8 = _mm256_set1_ps(s0 + 8), x9 = _mm256_set1_ps(s0 + 9),
         x10 = _mm256_set1_ps(s0 + 10), x11 = _mm256_set1_ps(s0 + 11);
  for (long i = 0; i < iters; ++i) {
    x0 = _mm256_fmadd_ps(x0, a, b), x1 = _mm256_fmadd_ps(x1, a, b), x2 = _mm256_fmadd_ps(x2, a, b);
    x3 = _mm256_fmadd_ps(x3, a, b), x4 = _mm256_fmadd_ps(x4, a, b), x5 = _mm256_fmadd_ps(x5, a, b);
    x6 = _mm256_fmadd_ps(x6, a, b), x7 = _mm256_fmadd_ps(x7, a, b), x8 = _mm256_fmadd_ps(x8, a, b);
    x9 = _mm256_fmadd_ps(x9, a, b), x10 = _mm256_fmadd_ps(x10, a, b), x11 = _mm256_fmadd_ps(x11, a, b);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(x0, x1), _mm256_add_ps(x2, x3)),
                           _mm256_add_ps(_mm256_add_ps(x4, x5), _mm256_add_ps(x6, x7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(x8, x9), _mm256_add_ps(x10, x11)));
  alignas(32) float v[8];
  _mm256_store_ps(v, s);
  g_sink.store(v[0] + v[7], std::memory_order_relaxed);
}

void chains_scalar(long iters) {
  float x[kChains];
  for (int i = 0; i < kChains; ++i) x[i] = g_sink.load(std::memory_order_relaxed) + static_cast<float>(i);
  for (long i = 0; i < iters; ++i)
    for (float& v : x) v = v * 0.999999f + 1e-7f;
  float s = 0;
  for (float v : x) s += v;
  g_sink.store(s, std::memory_order_relaxed);
}

// Seconds for `threads` threads each running `iters` iterations of `fn`.
double trial(void (*fn)(long), int threads, long iters) {
  std::vector<std::thread> pool;
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, iters);
  for (auto& th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int fma_peak(const std::vector<std::string>& args) {
  int threads = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--threads" && i + 1 < args.size()) {
      if (!parse_threads(args[++i], &threads)) {
        std::fprintf(stderr, "bench --fma-peak: --threads expects an integer 0..1024, got '%s'\n", args[i].c_str());
        return 2;
      }
    } else if (args[i] == "--threads") {
      std::fprintf(stderr, "bench --fma-peak: --threads needs a value (an integer 0..1024)\n");
      return 2;
    } else {
      std::fprintf(stderr, "bench --fma-peak: unknown option '%s'\n", args[i].c_str());
      return 2;
    }
  }
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  __builtin_cpu_init();
  void (*fn)(long) = chains_scalar;
  const char* isa = "scalar";
  int lanes = 1, chains = kChains;
  if (__builtin_cpu_supports("avx512f")) {
    fn = chains_avx512, isa = "avx512", lanes = 16;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    fn = chains_avx2, isa = "avx2", lanes = 8, chains = 12;
  }
  // Calibrate to about 0.2 s per trial, then keep the best of 5 (the least disturbed).
  long iters = 1 << 20;
  while (trial(fn, 1, iters) < 0.05 && iters < (1L << 34)) iters *= 2;
  iters *= 4;
  double best = 1e30;
  for (int k = 0; k < 5; ++k) best = std::min(best, trial(fn, threads, iters));
  const double flops = 2.0 * lanes * chains * static_cast<double>(iters) * threads;
  std::printf("{\"gflops\": %.2f, \"threads\": %d, \"isa\": \"%s\", \"lanes\": %d}\n", flops / best * 1e-9, threads,
              isa, lanes);
  return 0;
}

}  // namespace fusert::bench
