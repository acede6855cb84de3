// Source emulation of the generated CUDA kernels, part 2: the CUDA built-ins the generated
// sources use, on the host.
//
// A launch runs the blocks of the grid one after another. Within a block every CUDA thread is
// a fiber (ucontext) with its own stack, scheduled cooperatively and deterministically: each
// runs until it reaches __syncthreads() or __shfl_xor_sync() (or returns). When every live
// thread is parked:
//  * a warp whose 32 lanes all wait in __shfl_xor_sync with the full mask and one offset
//    exchanges values and continues (lanes parked elsewhere, or a partial mask: error);
//  * when every thread of the block waits in __syncthreads(), all continue (a thread that
//    returned while others wait at a barrier is reported as barrier divergence);
//  * otherwise the block is deadlocked: error.
// Threads run in ascending or descending threadIdx order (Order), so a shared-memory race
// missing a barrier shows up as a difference between the two orders. Dynamic shared memory is
// exactly the launch's byte count, filled with NaN at every block start and followed by a guard
// zone checked after every block (an overrun is an error).
// Errors throw std::runtime_error from launch().
#pragma once

#include <ucontext.h>

#include <math.h>  // expf, erff, tanhf, powf, sqrtf in the global namespace, as in CUDA
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace fz_emu {
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
}  // namespace fz_emu

// The CUDA built-in variables (set by the scheduler before a fiber resumes).
inline fz_emu::Dim3 threadIdx, blockIdx, gridDim, blockDim;

namespace fz_emu {

enum class State { kReady, kSync, kShuffle, kDone };
enum class Order { kAscending, kDescending };

struct Fiber {
  ucontext_t ctx;
  std::unique_ptr<char[]> stack;
  State state = State::kReady;
  unsigned shfl_mask = 0;
  int shfl_offset = 0;
  double shfl_value = 0.0, shfl_result = 0.0;  ///< wide enough for the float and double overloads
};

struct Scheduler {
  static constexpr size_t kStack = 64 * 1024;
  static constexpr size_t kGuard = 64;  // floats after the dynamic shared memory
  std::vector<Fiber> fibers;
  ucontext_t main;
  unsigned current = 0;
  void (*run)(const void*) = nullptr;
  const void* args = nullptr;
  std::vector<float> shared;  // dynamic shared memory + guard
};

inline Scheduler& scheduler() {
  static Scheduler s;
  return s;
}

/// The dynamic shared memory of the running block (`extern __shared__ float x[]`).
inline float* dynamic_shared() { return scheduler().shared.data(); }

inline void park(State st) {
  Scheduler& s = scheduler();
  Fiber& f = s.fibers[s.current];
  f.state = st;
  swapcontext(&f.ctx, &s.main);
}

inline void fiber_main() {
  Scheduler& s = scheduler();
  s.run(s.args);
  s.fibers[s.current].state = State::kDone;  // returns to uc_link = main
}

inline std::string where() {
  return " (block " + std::to_string(blockIdx.x) + "," + std::to_string(blockIdx.y) + "," + std::to_string(blockIdx.z) +
         ")";
}

/// Runs `run(args)` over grid x block threads with `shared_bytes` of dynamic shared memory.
inline void launch(void (*run)(const void*), const void* args, Dim3 grid, unsigned block, size_t shared_bytes,
                   Order order) {
  Scheduler& s = scheduler();
  if (block == 0 || block % 32 != 0 || block > 1024) throw std::runtime_error("block must be a multiple of 32");
  if (s.fibers.size() < block) s.fibers.resize(block);
  for (Fiber& f : s.fibers) {
    if (!f.stack) f.stack.reset(new char[Scheduler::kStack]);
  }
  s.run = run, s.args = args;
  const size_t dyn = (shared_bytes + sizeof(float) - 1) / sizeof(float);
  s.shared.assign(dyn + Scheduler::kGuard, 0.f);
  gridDim = grid, blockDim = {block, 1, 1};
  const float guard = -1.2345e-31f;
  for (unsigned z = 0; z < grid.z; ++z) {
    for (unsigned y = 0; y < grid.y; ++y) {
      for (unsigned x = 0; x < grid.x; ++x) {
        blockIdx = {x, y, z};
        std::fill(s.shared.begin(), s.shared.begin() + static_cast<ptrdiff_t>(dyn),
                  std::numeric_limits<float>::quiet_NaN());
        std::fill(s.shared.begin() + static_cast<ptrdiff_t>(dyn), s.shared.end(), guard);
        for (unsigned t = 0; t < block; ++t) {
          Fiber& f = s.fibers[t];
          getcontext(&f.ctx);
          f.ctx.uc_stack.ss_sp = f.stack.get();
          f.ctx.uc_stack.ss_size = Scheduler::kStack;
          f.ctx.uc_link = &s.main;
          makecontext(&f.ctx, fiber_main, 0);
          f.state = State::kReady;
        }
        for (;;) {
          // Run every ready thread until it parks or returns.
          for (unsigned i = 0; i < block; ++i) {
            const unsigned t = order == Order::kAscending ? i : block - 1 - i;
            if (s.fibers[t].state != State::kReady) continue;
            s.current = t;
            threadIdx = {t, 0, 0};
            swapcontext(&s.main, &s.fibers[t].ctx);
          }
          unsigned done = 0, sync = 0;
          bool progress = false;
          for (unsigned w = 0; w < block / 32; ++w) {
            unsigned shfl = 0;
            for (unsigned l = 0; l < 32; ++l) shfl += s.fibers[w * 32 + l].state == State::kShuffle;
            if (shfl == 0) continue;
            if (shfl != 32)
              throw std::runtime_error("__shfl_xor_sync: not all lanes of warp " + std::to_string(w) + " take part" +
                                       where());
            for (unsigned l = 0; l < 32; ++l) {
              const Fiber& f = s.fibers[w * 32 + l];
              if (f.shfl_mask != 0xffffffffu || f.shfl_offset != s.fibers[w * 32].shfl_offset || f.shfl_offset < 0 ||
                  f.shfl_offset > 31)
                throw std::runtime_error("__shfl_xor_sync: mask or offset differ within warp " + std::to_string(w) +
                                         where());
            }
            for (unsigned l = 0; l < 32; ++l) {
              Fiber& f = s.fibers[w * 32 + l];
              f.shfl_result = s.fibers[w * 32 + (l ^ static_cast<unsigned>(f.shfl_offset))].shfl_value;
            }
            for (unsigned l = 0; l < 32; ++l) s.fibers[w * 32 + l].state = State::kReady;
            progress = true;
          }
          if (progress) continue;
          for (unsigned t = 0; t < block; ++t) {
            done += s.fibers[t].state == State::kDone;
            sync += s.fibers[t].state == State::kSync;
          }
          if (done == block) break;
          if (sync + done != block) throw std::runtime_error("deadlock" + where());
          if (done != 0) throw std::runtime_error("__syncthreads not reached by threads that returned" + where());
          for (unsigned t = 0; t < block; ++t) s.fibers[t].state = State::kReady;
        }
        for (size_t i = dyn; i < s.shared.size(); ++i) {
          if (std::memcmp(&s.shared[i], &guard, sizeof guard) != 0)
            throw std::runtime_error("write past the dynamic shared memory" + where());
        }
      }
    }
  }
}

}  // namespace fz_emu

// ---- CUDA device built-ins used by the generated sources -------------------------------------
// (Names as in CUDA; reserved identifiers by the C++ standard, used here on purpose.)

inline void __syncthreads() { fz_emu::park(fz_emu::State::kSync); }

inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask) {
  fz_emu::Scheduler& s = fz_emu::scheduler();
  fz_emu::Fiber& f = s.fibers[s.current];
  f.shfl_mask = mask, f.shfl_offset = lane_mask, f.shfl_value = v;
  fz_emu::park(fz_emu::State::kShuffle);
  return static_cast<float>(f.shfl_result);
}
inline double __shfl_xor_sync(unsigned mask, double v, int lane_mask) {
  fz_emu::Scheduler& s = fz_emu::scheduler();
  fz_emu::Fiber& f = s.fibers[s.current];
  f.shfl_mask = mask, f.shfl_offset = lane_mask, f.shfl_value = v;
  fz_emu::park(fz_emu::State::kShuffle);
  return f.shfl_result;
}

inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, sizeof f);
  return f;
}
