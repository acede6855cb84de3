// The differential planner fuzzer's checks (fuzz_planner.cc drives them): the fusion modes, the
// per-output tolerance from the conditioning probe, and the checks of one model file: every mode
// against `--fusion raw` (check_model), bf16, a symbolic batch, a zero-size batch, and QDQ networks
// (check_qdq_model, fuzz_check_qdq.cc).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace fusert::fuzz {

struct Mode {
  const char* name;
  const char* fusion;
  bool profile = false;
  const char* plan_for = "";
  const char* device = "cpu";
  const char* cpu_kernels = "onednn";
  bool all_blocks = false;
  const char* precision = "f32";
};

/// The modes each graph runs in, beside `raw` (fuzz_check.cc).
extern const std::vector<Mode> kModes;

/// What the checks saw, for the summary line.
struct Counts {
  int64_t outputs = 0, widened = 0, unjudged = 0;
  int64_t blocks = 0;    ///< 1x1+depthwise groups formed (coverage of the block fusion)
  int64_t symbolic = 0;  ///< graphs also run planned at another batch (symbolic dim)
  int64_t zero = 0;      ///< runs given a zero-size batch (each must fail with an error naming the input)
  int64_t qdq = 0;       ///< QDQ networks checked to the bit (fuzz_check_qdq.cc)
};
extern Counts g_counts;  ///< of the current process (a child reports its own through the pipe)
/// The CPU runs bf16 natively (oneDNN's view): the bf16 modes are checked.
extern const bool g_bf16;

/// A session on the model at `path` in mode `m` (nullptr: raw on the reference kernels), its
/// weights and every op's output moved by a few ulps with `jitter` (the conditioning probe).
Result<std::unique_ptr<Session>> open(const std::string& path, const Mode* m, int threads, uint64_t jitter = 0);
/// Compares `got` with `want` output by output within `tol` (relative L2); empty when they agree.
std::string compare(const TensorMap& want, const TensorMap& got, const std::map<std::string, double>& tol);
/// A zero-size batch must fail with an error naming the input.
std::string check_zero_batch(Session& s, const TensorMap& in, const char* mode);
/// The model with a symbolic batch, planned at another batch, against `want`.
std::string check_symbolic(const std::string& path, int threads, const TensorMap& in, const TensorMap& want,
                           const std::map<std::string, double>& tol);
/// Every mode on the model at `path`; empty when all agree, else what failed first.
std::string check_model(const std::string& path, int threads);
/// The same for a QDQ network (graph_gen.h qdq_graph): every mode and kernel set to the bit; `pow2`:
/// its scales are powers of two (exact ties everywhere: raw is compared more loosely).
std::string check_qdq_model(const std::string& path, int threads, bool pow2);

}  // namespace fusert::fuzz
