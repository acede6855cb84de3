// NVRTC (CUDA C++ -> LTO-IR) + nvJitLink (LTO-IR -> sm_90 cubin) with a two-level cache: an
// in-process map and a directory of <hash>.cubin + <hash>.meta files written atomically. The
// register and spill counts come from nvJitLink's verbose (ptxas) info log; no GPU is needed.
#include "kernels/cuda/nvrtc_compiler.h"

#include <nvJitLink.h>
#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <sstream>

namespace fusert::cuda {
namespace {

const char* const kNvrtcOptions[] = {"-arch=compute_90", "-dlto", "--std=c++17"};
const char* const kLinkOptions[] = {"-arch=sm_90", "-lto", "-verbose", "-O3"};

struct Cache {
  std::mutex mu;
  std::map<std::string, CompiledKernel> kernels;  // hash -> kernel
  CompileCounters counters;
};

Cache& cache() {
  static Cache c;
  return c;
}

// 64-bit FNV-1a, fed piece by piece; each piece ends with a 0 byte so that ("ab", "c") and
// ("a", "bc") hash differently.
struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h = (h ^ 0u) * 0x100000001b3ull;
  }
};

std::string hex16(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Key of (source, options, toolkit version). nvJitLink's version joins NVRTC's because the
// two libraries can be upgraded separately and either one changes the cubin.
std::string cache_key(const std::string& source) {
  Fnv1a f;
  f.add(source);
  for (const char* o : kNvrtcOptions) f.add(o);
  for (const char* o : kLinkOptions) f.add(o);
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) == NVRTC_SUCCESS)
    f.add("nvrtc " + std::to_string(major) + "." + std::to_string(minor));
  unsigned lmajor = 0, lminor = 0;
  if (nvJitLinkVersion(&lmajor, &lminor) == NVJITLINK_SUCCESS) {
    f.add("nvjitlink " + std::to_string(lmajor) + "." + std::to_string(lminor));
  }
  return hex16(f.h);
}

// ---------------------------------------------------------------- ptxas log
// nvJitLink -verbose prints, per function:
//   ptxas info    : Function properties for <name>
//   ptxas         .     S bytes stack frame, A bytes spill stores, B bytes spill loads
//   ptxas info    : Used N registers, used 0 barriers          (entries only)
// Registers: the maximum over the entry's blocks. Spills and stack: summed over the entry and
// over every non-entry function (a callee the entry may run); other entries are ignored.
// Returns false when the log never names `entry`.
bool parse_ptxas_log(const std::string& log, const std::string& entry, CompiledKernel* k) {
  std::istringstream in(log);
  std::string line, current;
  bool found = false;
  std::map<std::string, bool> is_entry;
  const std::string kProps = "Function properties for ", kEntry = "Compiling entry function '";
  while (std::getline(in, line)) {
    if (size_t p = line.find(kEntry); p != std::string::npos) {
      const size_t b = p + kEntry.size(), e = line.find('\'', b);
      is_entry[line.substr(b, e == std::string::npos ? std::string::npos : e - b)] = true;
    } else if (size_t p2 = line.find(kProps); p2 != std::string::npos) {
      current = line.substr(p2 + kProps.size());
      while (!current.empty() && (current.back() == '\r' || current.back() == ' ')) current.pop_back();
      found = found || current == entry;
    } else if (line.find("bytes stack frame") != std::string::npos) {
      const bool counts = current == entry || !is_entry.count(current);
      int stack = 0, stores = 0, loads = 0;
      if (counts &&
          std::sscanf(line.c_str(), "ptxas . %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &stack,
                      &stores, &loads) == 3) {
        k->stack_bytes += stack;
        k->spill_store_bytes += stores;
        k->spill_load_bytes += loads;
      }
    } else if (size_t p3 = line.find("Used "); p3 != std::string::npos && current == entry) {
      int regs = 0;
      if (std::sscanf(line.c_str() + p3, "Used %d registers", &regs) == 1 && regs > k->registers) k->registers = regs;
    }
  }
  return found;
}

// ---------------------------------------------------------------- NVRTC / nvJitLink
struct Program {
  nvrtcProgram p = nullptr;
  ~Program() {
    if (p != nullptr) nvrtcDestroyProgram(&p);
  }
};
struct Linker {
  nvJitLinkHandle h = nullptr;
  ~Linker() {
    if (h != nullptr) nvJitLinkDestroy(&h);
  }
};

std::string program_log(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

std::string link_log(nvJitLinkHandle h, bool error_log) {
  size_t size = 0;
  const nvJitLinkResult r = error_log ? nvJitLinkGetErrorLogSize(h, &size) : nvJitLinkGetInfoLogSize(h, &size);
  if (r != NVJITLINK_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if ((error_log ? nvJitLinkGetErrorLog(h, log.data()) : nvJitLinkGetInfoLog(h, log.data())) != NVJITLINK_SUCCESS) {
    return "";
  }
  log.resize(log.find('\0') == std::string::npos ? log.size() : log.find('\0'));
  return log;
}

// "nvrtcCompileProgram(prog.p, ...)" -> "nvrtcCompileProgram": error messages name the call.
std::string api_name(const char* call) {
  const std::string s = call;
  return s.substr(0, s.find('('));
}

#define FZ_NVRTC_CHECK(call)                                                                                \
  do {                                                                                                      \
    const nvrtcResult _r = (call);                                                                          \
    if (_r != NVRTC_SUCCESS) {                                                                              \
      return error(StatusCode::kDeviceError) << what << ": " << api_name(#call) << " failed ("              \
                                             << nvrtcGetErrorString(_r) << ") for kernel " << entry << "\n" \
                                             << program_log(prog.p);                                        \
    }                                                                                                       \
  } while (0)

#define FZ_NVJITLINK_CHECK(call)                                                                               \
  do {                                                                                                         \
    const nvJitLinkResult _r = (call);                                                                         \
    if (_r != NVJITLINK_SUCCESS) {                                                                             \
      return error(StatusCode::kDeviceError) << what << ": " << api_name(#call) << " failed (nvJitLinkResult " \
                                             << static_cast<int>(_r) << ") for kernel " << entry << "\n"       \
                                             << (link.h ? link_log(link.h, true) : "");                        \
    }                                                                                                          \
  } while (0)

Result<std::vector<char>> compile_to_ltoir(const std::string& source, const std::string& entry,
                                           const std::string& what) {
  Program prog;
  FZ_NVRTC_CHECK(nvrtcCreateProgram(&prog.p, source.c_str(), (entry + ".cu").c_str(), 0, nullptr, nullptr));
  FZ_NVRTC_CHECK(nvrtcCompileProgram(prog.p, static_cast<int>(std::size(kNvrtcOptions)), kNvrtcOptions));
  size_t size = 0;
  FZ_NVRTC_CHECK(nvrtcGetLTOIRSize(prog.p, &size));
  std::vector<char> ir(size);
  FZ_NVRTC_CHECK(nvrtcGetLTOIR(prog.p, ir.data()));
  return ir;
}

Result<CompiledKernel> link_cubin(const std::vector<char>& ir, const std::string& entry, const std::string& what) {
  Linker link;
  std::vector<const char*> options(std::begin(kLinkOptions), std::end(kLinkOptions));  // API takes const char**
  FZ_NVJITLINK_CHECK(nvJitLinkCreate(&link.h, static_cast<uint32_t>(options.size()), options.data()));
  FZ_NVJITLINK_CHECK(nvJitLinkAddData(link.h, NVJITLINK_INPUT_LTOIR, ir.data(), ir.size(), entry.c_str()));
  FZ_NVJITLINK_CHECK(nvJitLinkComplete(link.h));
  CompiledKernel k;
  k.entry = entry;
  size_t size = 0;
  FZ_NVJITLINK_CHECK(nvJitLinkGetLinkedCubinSize(link.h, &size));
  k.cubin.resize(size);
  FZ_NVJITLINK_CHECK(nvJitLinkGetLinkedCubin(link.h, k.cubin.data()));
  const std::string info = link_log(link.h, false);
  if (!parse_ptxas_log(info, entry, &k)) {
    return error(StatusCode::kDeviceError)
           << what << ": the linked cubin has no entry function " << entry << " (nvJitLink log:\n"
           << info << ")";
  }
  return k;
}

// ---------------------------------------------------------------- disk cache
// <hash>.meta is written after <hash>.cubin and names the cubin's size, so a reader never
// trusts a cubin whose meta is missing, unparsable or disagrees with the file.
// Checksum of a cubin recorded in its .meta, so a damaged cubin of the right size is a miss.
std::string cubin_checksum(const char* data, size_t size) {
  Fnv1a f;
  f.add(std::string(data, size));
  return hex16(f.h);
}

std::string meta_text(const CompiledKernel& k) {
  std::ostringstream os;
  os << "fusert-kernel-meta 2\n"
     << "entry " << k.entry << "\n"
     << "registers " << k.registers << "\n"
     << "spill_stores " << k.spill_store_bytes << "\n"
     << "spill_loads " << k.spill_load_bytes << "\n"
     << "stack " << k.stack_bytes << "\n"
     << "cubin_bytes " << k.cubin.size() << "\n"
     << "cubin_fnv1a " << cubin_checksum(k.cubin.data(), k.cubin.size()) << "\n"
     << "end\n";
  return os.str();
}

bool parse_meta(const std::string& text, CompiledKernel* k, size_t* cubin_bytes, std::string* checksum) {
  std::istringstream in(text);
  std::string magic, key;
  int version = 0;
  if (!(in >> magic >> version) || magic != "fusert-kernel-meta" || version != 2) return false;
  int seen = 0;
  while (in >> key) {
    if (key == "end") {
      // Numbers from a file: a hand-edited or damaged .meta is a miss, never a plan input.
      const bool sane = k->registers > 0 && k->registers <= 255 && k->spill_store_bytes >= 0 &&
                        k->spill_load_bytes >= 0 && k->stack_bytes >= 0 && k->spill_store_bytes < (1 << 24) &&
                        k->spill_load_bytes < (1 << 24) && k->stack_bytes < (1 << 24);
      return seen == 7 && sane;
    }
    bool ok = true;
    if (key == "entry")
      ok = static_cast<bool>(in >> k->entry);
    else if (key == "registers")
      ok = static_cast<bool>(in >> k->registers);
    else if (key == "spill_stores")
      ok = static_cast<bool>(in >> k->spill_store_bytes);
    else if (key == "spill_loads")
      ok = static_cast<bool>(in >> k->spill_load_bytes);
    else if (key == "stack")
      ok = static_cast<bool>(in >> k->stack_bytes);
    else if (key == "cubin_bytes")
      ok = static_cast<bool>(in >> *cubin_bytes);
    else if (key == "cubin_fnv1a")
      ok = static_cast<bool>(in >> *checksum);
    else
      return false;
    if (!ok) return false;
    ++seen;
  }
  return false;  // truncated before "end"
}

// Reads a cache file: regular files of at most 64 MiB only (a FIFO, device or huge file in
// the cache directory is a miss, never a hang or an unbounded read).
bool read_file(const std::filesystem::path& path, std::string* out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size > (64u << 20)) return false;
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return !f.bad();
}

// Written to a unique temporary name in the same directory, then renamed over the target:
// readers (other processes included) see either no file or the whole file.
bool write_file_atomic(const std::filesystem::path& path, const char* data, size_t size) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) return false;
    f.write(data, static_cast<std::streamsize>(size));
    f.close();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

bool load_from_disk(const std::string& dir, const std::string& hash, const std::string& entry, CompiledKernel* k) {
  if (dir.empty()) return false;
  const std::filesystem::path base = std::filesystem::path(dir) / hash;
  std::string meta, cubin;
  size_t cubin_bytes = 0;
  CompiledKernel loaded;
  std::string checksum;
  if (!read_file(base.string() + ".meta", &meta) || !parse_meta(meta, &loaded, &cubin_bytes, &checksum)) return false;
  if (loaded.entry != entry || !read_file(base.string() + ".cubin", &cubin) || cubin.size() != cubin_bytes ||
      cubin.empty() || cubin_checksum(cubin.data(), cubin.size()) != checksum) {
    return false;
  }
  loaded.cubin.assign(cubin.begin(), cubin.end());
  loaded.hash = hash;
  loaded.from_cache = true;
  *k = std::move(loaded);
  return true;
}

void store_to_disk(const std::string& dir, const CompiledKernel& k) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);  // failure: the writes below fail quietly
  const std::filesystem::path base = std::filesystem::path(dir) / k.hash;
  if (!write_file_atomic(base.string() + ".cubin", k.cubin.data(), k.cubin.size())) return;
  const std::string meta = meta_text(k);
  write_file_atomic(base.string() + ".meta", meta.data(), meta.size());
}

}  // namespace

std::string kernel_cache_dir() {
  const char* dir = std::getenv("FUSERT_CACHE_DIR");
  if (dir != nullptr && *dir != '\0') return dir;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/fusert/kernels";
  const char* home = std::getenv("HOME");
  if (home != nullptr && *home != '\0') return std::string(home) + "/.cache/fusert/kernels";
  return "";  // no cache directory: compiles are not cached on disk
}

CompileCounters compile_counters() {
  std::lock_guard<std::mutex> lock(cache().mu);
  return cache().counters;
}

Result<CompiledKernel> compile_kernel(const std::string& source, const std::string& entry, const std::string& what) {
  const std::string hash = cache_key(source);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.kernels.find(hash);
    if (it != c.kernels.end() && it->second.entry == entry) {
      ++c.counters.memory_hits;
      return it->second;
    }
  }
  // Compiling happens outside the lock: two threads may compile the same source once each.
  const std::string dir = kernel_cache_dir();
  CompiledKernel k;
  if (load_from_disk(dir, hash, entry, &k)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.counters.disk_hits;
    c.kernels[hash] = k;
    return k;
  }
  const auto t0 = std::chrono::steady_clock::now();
  FUSERT_ASSIGN_OR_RETURN(std::vector<char> ir, compile_to_ltoir(source, entry, what));
  FUSERT_ASSIGN_OR_RETURN(k, link_cubin(ir, entry, what));
  k.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  k.hash = hash;
  store_to_disk(dir, k);
  std::lock_guard<std::mutex> lock(c.mu);
  ++c.counters.compiled;
  c.counters.compile_ms += k.compile_ms;
  c.kernels[hash] = k;
  return k;
}

}  // namespace fusert::cuda
