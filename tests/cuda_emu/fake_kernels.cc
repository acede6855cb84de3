// Kernel-side half of the fake CUDA runtime (tests/cuda_emu): reading what a generated
// kernel's cubin says about it (entry, parameter size, launch bounds, static shared memory),
// checking each launch's argument struct (kernel_abi.h) against live allocations, grid and
// shared memory, and the error texts. The runtime calls live in fake_cudart.cc.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/codegen.h"
#include "kernels/cuda/kernel_abi.h"
#include "tests/cuda_emu/emu.h"
#include "tests/cuda_emu/fake_cudart_internal.h"

namespace fusert::emu::detail {

// ---------------------------------------------------------------- cubin parsing

bool elf_ok(const std::vector<char>& img) {
  if (img.size() < sizeof(Elf64_Ehdr)) return false;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(img.data());
  return std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
}

// Size of an ELF image from its headers (the runtime gets only a pointer).
size_t elf_size(const void* code) {
  const auto* eh = static_cast<const Elf64_Ehdr*>(code);
  size_t end = eh->e_shoff + static_cast<size_t>(eh->e_shnum) * eh->e_shentsize;
  end = std::max<size_t>(end, eh->e_phoff + static_cast<size_t>(eh->e_phnum) * eh->e_phentsize);
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(static_cast<const char*>(code) + eh->e_shoff);
  for (int i = 0; i < eh->e_shnum; ++i) {
    if (sh[i].sh_type != SHT_NOBITS) end = std::max<size_t>(end, sh[i].sh_offset + sh[i].sh_size);
  }
  return std::max(end, sizeof(Elf64_Ehdr));
}

CubinKernel parse_kernel(const std::vector<char>& img, const std::string& entry) {
  CubinKernel k;
  const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(img.data());
  const auto* sh = reinterpret_cast<const Elf64_Shdr*>(img.data() + eh->e_shoff);
  const char* names = img.data() + sh[eh->e_shstrndx].sh_offset;
  for (int i = 0; i < eh->e_shnum; ++i) {
    const std::string name = names + sh[i].sh_name;
    if (name == ".text." + entry) k.found = true;
    if (name == ".nv.shared." + entry) k.static_shared = sh[i].sh_size;
    if (name != ".nv.info." + entry) continue;
    // Records: format (1: none, 2: byte, 3: half, 4: sized), attribute, then a 16-bit value
    // (format 3) or a 16-bit size and that many payload bytes (format 4).
    const unsigned char* p = reinterpret_cast<const unsigned char*>(img.data() + sh[i].sh_offset);
    const unsigned char* end = p + sh[i].sh_size;
    while (p + 4 <= end) {
      const unsigned fmt = p[0], attr = p[1];
      const unsigned half = static_cast<unsigned>(p[2]) | (static_cast<unsigned>(p[3]) << 8);
      if (fmt == 4) {
        if (attr == 0x05 && half >= 4) {  // EIATTR_MAX_THREADS: x, y, z
          uint32_t xyz[3] = {1, 1, 1};
          std::memcpy(xyz, p + 4, std::min<size_t>(half, sizeof xyz));
          k.max_threads = static_cast<int>(xyz[0] * xyz[1] * xyz[2]);
        }
        p += 4 + half;
      } else {
        if (fmt == 3 && attr == 0x19) k.param_bytes = half;  // EIATTR_CBANK_PARAM_SIZE
        p += 4;
      }
    }
  }
  return k;
}

// ---------------------------------------------------------------- kernel argument checks
size_t sizeof_args(const std::string& kind) {
  if (kind == "ew") return sizeof(FzEwArgs);
  if (kind == "ewmulti") return sizeof(FzMultiEwArgs);
  if (kind == "layernorm" || kind == "softmax") return sizeof(FzRowArgs);
  if (kind == "maxpool" || kind == "avgpool" || kind == "gavgpool") return sizeof(FzPoolArgs);
  if (kind == "attention") return sizeof(FzAttnArgs);
  return 0;
}

// Elements spanned by an index space of `dims` with `strides` (all >= 0): last offset + 1.
int64_t span(const fz_i64* dims, const fz_i64* strides, int rank, bool* negative) {
  int64_t last = 0;
  for (int d = 0; d < rank; ++d) {
    if (dims[d] <= 0) return 0;
    if (strides[d] < 0) *negative = true;
    last += (dims[d] - 1) * strides[d];
  }
  return last + 1;
}

bool check_f32(const void* p, int64_t elems, Access acc, const std::string& what) {
  if (elems <= 0) return true;
  if (!p) {
    record_violation(what + ": null pointer for " + std::to_string(elems) + " elements");
    return false;
  }
  return check_device_range(p, static_cast<size_t>(elems) * sizeof(float), acc, what);
}

bool check_ew(const FzEwArgs& a, const std::string& what) {
  bool ok = true;
  int64_t numel = 1;
  for (int d = 0; d < FZ_MAX_RANK; ++d) numel *= a.shape[d];
  if (numel != a.numel) {
    record_violation(what + ": numel " + std::to_string(a.numel) + " != product of the shape " + std::to_string(numel));
    ok = false;
  }
  if (a.numel <= 0) return ok;
  for (int i = 0; i < FZ_MAX_INPUTS; ++i) {
    if (!a.in[i]) continue;
    bool neg = false;
    const int64_t n = span(a.shape, a.in_strides[i], FZ_MAX_RANK, &neg);
    if (neg) record_violation(what + ": input " + std::to_string(i) + " has a negative stride");
    ok &= check_f32(a.in[i], n, Access::kRead, what + " input " + std::to_string(i));
  }
  bool any_out = false;
  for (int o = 0; o < FZ_MAX_OUTPUTS; ++o) {
    if (!a.out[o]) continue;
    any_out = true;
    ok &= check_f32(a.out[o], a.numel, Access::kWrite, what + " output " + std::to_string(o));
  }
  if (!any_out) {
    record_violation(what + ": no output pointer");
    ok = false;
  }
  return ok;
}

bool check_args(const CUkern_st& k, const void* args, dim3 grid, size_t shared) {
  const std::string what = "kernel " + k.entry;
  if (k.kind == "ew") return check_ew(*static_cast<const FzEwArgs*>(args), what);
  if (k.kind == "ewmulti") {
    const auto& a = *static_cast<const FzMultiEwArgs*>(args);
    bool ok = true;
    for (unsigned m = 0; m < FZ_MAX_MEMBERS; ++m) {
      const bool live = a.m[m].numel > 0 || a.m[m].out[0];
      if (m < grid.y) {
        ok &= check_ew(a.m[m], what + " member " + std::to_string(m));
      } else if (live) {
        record_violation(what + ": member " + std::to_string(m) + " has work but grid.y = " + std::to_string(grid.y));
        ok = false;
      }
    }
    if (grid.y > FZ_MAX_MEMBERS) record_violation(what + ": grid.y " + std::to_string(grid.y) + " > FZ_MAX_MEMBERS");
    return ok;
  }
  if (k.kind == "layernorm" || k.kind == "softmax") {
    const auto& a = *static_cast<const FzRowArgs*>(args);
    bool ok = true;
    if (grid.x != static_cast<uint64_t>(a.outer) || grid.y != 1 || grid.z != 1) {
      record_violation(what + ": one block per row expected: grid.x " + std::to_string(grid.x) + " for " +
                       std::to_string(a.outer) + " rows");
      ok = false;
    }
    if (shared < fusert::cuda::row_norm_shared_bytes(a.inner)) {
      record_violation(what + ": " + std::to_string(shared) + " bytes of dynamic shared memory for rows of " +
                       std::to_string(a.inner) + " floats");
      ok = false;
    }
    const fz_i64 dims[2] = {a.outer, a.inner};
    for (int i = 0; i < FZ_MAX_INPUTS; ++i) {
      if (!a.in[i]) continue;
      bool neg = false;
      ok &=
          check_f32(a.in[i], span(dims, a.in_strides[i], 2, &neg), Access::kRead, what + " input " + std::to_string(i));
      if (neg) record_violation(what + ": input " + std::to_string(i) + " has a negative stride");
    }
    return ok & check_f32(a.out, a.outer * a.inner, Access::kWrite, what + " output");
  }
  if (k.kind == "maxpool" || k.kind == "avgpool" || k.kind == "gavgpool") {
    const auto& a = *static_cast<const FzPoolArgs*>(args);
    bool ok = true;
    const fz_i64 in_dims[4] = {a.n, a.c, a.h, a.w}, out_dims[4] = {a.n, a.c, a.oh, a.ow};
    for (int i = 0; i < FZ_MAX_INPUTS; ++i) {
      if (!a.in[i]) continue;
      bool neg = false;
      // Input 0 is the pooled tensor (over [n, c, h, w]); others may be prologue operands
      // (over the input) or post operands (over the output): the smaller span must fit.
      const int64_t pre = span(in_dims, a.in_strides[i], 4, &neg), post = span(out_dims, a.in_strides[i], 4, &neg);
      ok &= check_f32(a.in[i], i == 0 ? pre : std::min(pre, post), Access::kRead, what + " input " + std::to_string(i));
    }
    if (k.kind == "gavgpool" && (a.oh != 1 || a.ow != 1)) {
      record_violation(what + ": global pooling with output " + std::to_string(a.oh) + "x" + std::to_string(a.ow));
      ok = false;
    }
    return ok & check_f32(a.out, a.n * a.c * a.oh * a.ow, Access::kWrite, what + " output");
  }
  if (k.kind == "attention") {
    const auto& a = *static_cast<const FzAttnArgs*>(args);
    bool ok = true;
    if (grid.x != static_cast<uint64_t>(a.seq) || grid.y != static_cast<uint64_t>(a.heads) ||
        grid.z != static_cast<uint64_t>(a.batch)) {
      record_violation(what + ": grid must be (seq, heads, batch)");
      ok = false;
    }
    // The head size is baked into the kernel; the lowering packs heads * head_dim per row.
    const int64_t d = a.heads > 0 ? std::min({a.q_stride, a.k_stride, a.v_stride}) / a.heads : 0;
    if (shared < fusert::cuda::attention_shared_bytes(a.seq, d)) {
      record_violation(what + ": " + std::to_string(shared) + " bytes of dynamic shared memory for seq " +
                       std::to_string(a.seq) + ", head_dim " + std::to_string(d));
      ok = false;
    }
    const int64_t rows = a.batch * a.seq;
    ok &= check_f32(a.q, (rows - 1) * a.q_stride + a.q_col + a.heads * d, Access::kRead, what + " q");
    ok &= check_f32(a.k, (rows - 1) * a.k_stride + a.k_col + a.heads * d, Access::kRead, what + " k");
    ok &= check_f32(a.v, (rows - 1) * a.v_stride + a.v_col + a.heads * d, Access::kRead, what + " v");
    if (a.mask) {
      ok &= check_f32(a.mask, (a.batch - 1) * a.mask_b_stride + (a.seq - 1) * a.mask_i_stride + a.seq, Access::kRead,
                      what + " mask");
    }
    return ok & check_f32(a.y, rows * a.heads * d, Access::kWrite, what + " y");
  }
  record_violation(what + ": unknown kernel kind '" + k.kind + "' (no argument check)");
  return true;
}

const char* error_name(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "cudaSuccess";
    case cudaErrorInvalidValue:
      return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
      return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
      return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDeviceFunction:
      return "cudaErrorInvalidDeviceFunction";
    case cudaErrorInvalidDevice:
      return "cudaErrorInvalidDevice";
    case cudaErrorInvalidKernelImage:
      return "cudaErrorInvalidKernelImage";
    case cudaErrorNoKernelImageForDevice:
      return "cudaErrorNoKernelImageForDevice";
    case cudaErrorInvalidResourceHandle:
      return "cudaErrorInvalidResourceHandle";
    case cudaErrorIllegalState:
      return "cudaErrorIllegalState";
    case cudaErrorSymbolNotFound:
      return "cudaErrorSymbolNotFound";
    case cudaErrorNotReady:
      return "cudaErrorNotReady";
    case cudaErrorIllegalAddress:
      return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources:
      return "cudaErrorLaunchOutOfResources";
    case cudaErrorLaunchFailure:
      return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported:
      return "cudaErrorNotSupported";
    case cudaErrorStreamCaptureUnsupported:
      return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated:
      return "cudaErrorStreamCaptureInvalidated";
    case cudaErrorInsufficientDriver:
      return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice:
      return "cudaErrorNoDevice";
    default:
      return "cudaErrorUnknown";
  }
}

const char* error_string(cudaError_t e) {
  switch (e) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction:
      return "invalid device function";
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidKernelImage:
      return "device kernel image is invalid";
    case cudaErrorNoKernelImageForDevice:
      return "no kernel image is available for execution on the device";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle";
    case cudaErrorIllegalState:
      return "the operation cannot be performed in the present state";
    case cudaErrorSymbolNotFound:
      return "named symbol not found";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorIllegalAddress:
      return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources:
      return "too many resources requested for launch";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure";
    case cudaErrorNotSupported:
      return "operation not supported";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorInsufficientDriver:
      return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice:
      return "no CUDA-capable device is detected";
    default:
      return "unknown error";
  }
}

}  // namespace fusert::emu::detail
