// run_elementwise_program: a fused chain of elementwise/broadcast ops as one pass over the
// output in chunks. Registers are chunk-sized thread-local buffers (L1/L2 resident), so each
// intermediate lives only in cache; contiguous inputs are read in place, never copied.
#include <algorithm>
#include <cassert>
#include <functional>

#include "kernels/cpu/fused_internal.h"
#include "kernels/cpu/parallel.h"

namespace fusert::cpu {
namespace {

using detail::StridedIndex;

// How an input is read: in place when its strides match the output (the kFull fast path),
// one broadcast value when every stride is 0, otherwise gathered run by run.
struct InputView {
  const float* data = nullptr;
  StridedIndex index;
  bool contiguous = false, scalar = false;
};

InputView make_view(const ElementwiseProgram& prog, size_t i, const float* data, int64_t total) {
  InputView v;
  v.data = data;
  v.index = StridedIndex(prog.out_shape, prog.input_strides[i]);
  v.scalar = v.index.dims.size() == 1 && v.index.strides[0] == 0;
  v.contiguous = v.index.dims.size() == 1 && v.index.strides[0] == 1 && v.index.dims[0] == total;
  return v;
}

// Values of flat indices [f0, f0 + count): a pointer with *stride 1, or 0 for one broadcast
// value. Reads in place whenever the chunk lies in one run of the input (a per-channel operand
// over a large plane, a contiguous input); only chunks that straddle runs are gathered.
const float* read_input(const InputView& in, int64_t f0, int64_t count, float* tmp, int64_t* stride) {
  *stride = in.scalar ? 0 : 1;
  if (in.scalar) return in.data;
  if (in.contiguous) return in.data + f0;
  const int64_t s = in.index.strides.back();
  for (int64_t done = 0; done < count;) {
    int64_t run = 0;
    const float* src = in.data + in.index.locate(f0 + done, &run);
    if (done == 0 && run >= count && (s == 0 || s == 1)) {
      *stride = s;
      return src;
    }
    run = std::min(run, count - done);
    if (s == 0) {
      std::fill(tmp + done, tmp + done + run, src[0]);
    } else if (s == 1) {
      std::copy(src, src + run, tmp + done);
    } else {
      for (int64_t j = 0; j < run; ++j) tmp[done + j] = src[j * s];
    }
    done += run;
  }
  return tmp;
}

// Per-thread state: register buffers and where each register's current value lives (its own
// buffer, or directly an input it was loaded from).
struct Registers {
  std::vector<float> buf, tmp;
  std::vector<const float*> view;
  int64_t chunk;
  Registers(int count, int64_t chunk_size)
      : buf(static_cast<size_t>(count * chunk_size)),
        tmp(static_cast<size_t>(chunk_size)),
        view(static_cast<size_t>(count), nullptr),
        chunk(chunk_size) {}
  float* own(int r) { return buf.data() + r * chunk; }
};

void load_register(const InputView& in, int reg, int64_t f0, int64_t count, Registers& regs) {
  int64_t stride = 0;
  float* dst = regs.own(reg);
  const float* src = read_input(in, f0, count, dst, &stride);
  if (stride == 0) {
    std::fill(dst, dst + count, src[0]);
    src = dst;
  }
  regs.view[static_cast<size_t>(reg)] = src;
}

// Whether [a, a + n) and [b, b + n) share memory (std::less: the buffers may be unrelated).
bool overlaps(const float* a, const float* b, int64_t n) {
  const std::less<const float*> lt;
  return lt(a, b + n) && lt(b, a + n);
}

// A register still viewing an input in place must not be read after a store has overwritten
// that input (an output computed in place over a contiguous input): such views are copied to
// the register's own buffer before the first store.
void store_registers(const ElementwiseProgram& prog, const std::vector<float*>& outputs, int64_t f0, int64_t count,
                     Registers& regs) {
  for (const auto& [reg, output] : prog.stores) {
    const float*& v = regs.view[static_cast<size_t>(reg)];
    assert(v != nullptr);
    if (v == regs.own(reg)) continue;
    for (float* out : outputs) {
      if (overlaps(v, out + f0, count)) {
        std::copy(v, v + count, regs.own(reg));
        v = regs.own(reg);
        break;
      }
    }
  }
  for (const auto& [reg, output] : prog.stores) {
    const float* v = regs.view[static_cast<size_t>(reg)];
    float* dst = outputs[static_cast<size_t>(output)] + f0;
    if (v != dst) std::copy(v, v + count, dst);
  }
}

void run_chunk(const ElementwiseProgram& prog, const std::vector<InputView>& inputs, const std::vector<float*>& outputs,
               int64_t f0, int64_t count, Registers& regs) {
  std::fill(regs.view.begin(), regs.view.end(), nullptr);
  const bool implicit =
      !inputs.empty() && std::none_of(prog.loads.begin(), prog.loads.end(), [](auto& l) { return l.first == 0; });
  if (implicit) load_register(inputs[0], 0, f0, count, regs);
  for (const auto& [reg, input] : prog.loads) load_register(inputs[static_cast<size_t>(input)], reg, f0, count, regs);
  for (const ElementwiseInstr& ins : prog.code) {
    const float* in = regs.view[static_cast<size_t>(ins.src)];
    assert(in != nullptr && "register read before it is written");
    const float* t = nullptr;
    int64_t ts = 1;
    if (ins.src2 >= 0) {
      t = regs.view[static_cast<size_t>(ins.src2)];
    } else if (ins.input >= 0) {
      t = read_input(inputs[static_cast<size_t>(ins.input)], f0, count, regs.tmp.data(), &ts);
    }
    float* out = regs.own(ins.dst);
    detail::apply_op(ins.op, ins.a, ins.b, ins.operand_first, in, t, ts, count, out);
    regs.view[static_cast<size_t>(ins.dst)] = out;
  }
  store_registers(prog, outputs, f0, count, regs);
}

}  // namespace

void run_elementwise_program(const ElementwiseProgram& prog, const std::vector<const float*>& inputs,
                             const std::vector<float*>& outputs) {
  assert(prog.input_strides.size() == inputs.size());
  int64_t total = 1;
  for (int64_t d : prog.out_shape) total *= d;
  if (total <= 0) return;
  std::vector<InputView> views;
  views.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) views.push_back(make_view(prog, i, inputs[i], total));
  // 1024-4096 elements per register: all registers of a chunk fit in L1/L2 together.
  const int regs_count = std::max(prog.num_registers, 1);
  const int64_t chunk = std::clamp<int64_t>(16384 / regs_count / 1024 * 1024, 1024, 4096);
  const int64_t chunks = (total + chunk - 1) / chunk;
  const int64_t ops = static_cast<int64_t>(prog.code.size() + prog.stores.size()) + 1;
  const int team = static_cast<int>(std::min<int64_t>(chunks, detail::team_size(total * ops)));
#pragma omp parallel num_threads(team) if (team > 1)
  {
    Registers regs(regs_count, chunk);
#pragma omp for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t f0 = c * chunk;
      run_chunk(prog, views, outputs, f0, std::min(chunk, total - f0), regs);
    }
  }
}

}  // namespace fusert::cpu
