// Loading oneDNN and choosing between it and the BLAS (onednn_gemm.h).
#include "devices/cpu/onednn_gemm.h"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "aotishim/runtime.h"
#include "core/error.h"
#include "core/library_search.h"

namespace aotishim::cpu::onednn {
namespace {

// dnnl_version_t's layout (oneDNN 3.x, dnnl_types.h).
struct Version {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime;
  unsigned gpu_runtime;
};
// DNNL_RUNTIME_SEQ and DNNL_RUNTIME_OMP (dnnl_config.h).
constexpr unsigned kRuntimeSequential = 1u, kRuntimeOpenMP = 2u;

const LibrarySearch& search() {
  // The onednn-cpu-gomp wheel installs into the environment's lib/ folder,
  // three levels above the package folder (lib/pythonX.Y/site-packages/aotishim).
  static const LibrarySearch s{"oneDNN", "AOTISHIM_ONEDNN_PATH", {"libdnnl.so.3"}, {"../../../"}, {}};
  return s;
}

struct Loaded {
  Sgemm sgemm = nullptr;
  std::string description;  // "oneDNN 3.2.0 (OpenMP) at PATH"
};

// Loads oneDNN and checks its threading; throws naming what was tried.
Loaded load() {
  const FoundLibrary lib = load_library(
      search(), "oneDNN (libdnnl.so.3, OpenMP build: pip install onednn-cpu-gomp) was asked for "
                "with AOTISHIM_CPU_GEMM=onednn but could not be loaded; set AOTISHIM_ONEDNN_PATH "
                "to libdnnl.so.3 (or its folder).");
  Loaded out;
  const Version* (*version)() = nullptr;
  resolve_symbol(lib, search(), "dnnl_sgemm", out.sgemm);
  resolve_symbol(lib, search(), "dnnl_version", version);
  const Version* v = version();
  AOTISHIM_CHECK(v != nullptr && v->major >= 3, "oneDNN at ", lib.path,
                 " is older than 3.0 (its dnnl_version_t differs)");
  const bool openmp = v->cpu_runtime == kRuntimeOpenMP;
  AOTISHIM_CHECK(openmp || v->cpu_runtime == kRuntimeSequential, "oneDNN at ", lib.path,
                 " threads with its own pool (cpu runtime ", v->cpu_runtime,
                 "), which would contend with the model's OpenMP threads; use the OpenMP build "
                 "(onednn-cpu-gomp)");
  out.description = str("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (",
                        openmp ? "OpenMP" : "sequential", ") at ", lib.path);
  return out;
}

enum class Choice { kAuto, kOneDnn, kBlas };

Choice parse(const std::string& name) {
  if (name.empty() || name == "auto") return Choice::kAuto;
  if (name == "onednn") return Choice::kOneDnn;
  if (name == "blas") return Choice::kBlas;
  fail(str("unknown cpu GEMM library '", name, "': expected \"auto\", \"onednn\" or \"blas\""));
}

std::mutex g_mutex;
std::atomic<bool> g_chosen{false};
std::atomic<Sgemm> g_sgemm{nullptr};
std::string g_description;  // under g_mutex

// Applies a choice; throws (changing nothing) when oneDNN is required and
// missing. "auto" tries the load once per choice, so a machine without
// oneDNN pays for the search once.
void apply(Choice choice) {
  Loaded loaded;
#if defined(__APPLE__)
  // Accelerate is the macOS GEMM; no oneDNN build is shipped there.
  if (choice == Choice::kAuto) choice = Choice::kBlas;
#endif
  if (choice != Choice::kBlas) {
    try {
      loaded = load();
    } catch (const Error&) {
      if (choice == Choice::kOneDnn) throw;
      loaded = Loaded{};
    }
  }
  g_sgemm.store(loaded.sgemm, std::memory_order_release);
  g_description = loaded.sgemm != nullptr ? loaded.description : "blas";
  g_chosen.store(true, std::memory_order_release);
}

void choose_from_environment() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_chosen.load(std::memory_order_acquire)) return;
  const char* env = std::getenv("AOTISHIM_CPU_GEMM");
  apply(parse(env != nullptr ? env : ""));
}

}  // namespace

Sgemm chosen_sgemm() {
  if (!g_chosen.load(std::memory_order_acquire)) choose_from_environment();
  return g_sgemm.load(std::memory_order_acquire);
}

bool prefers_onednn(int64_t m, int64_t n, int64_t k) {
  // Fitted to a sweep of m in {4, 16, 64, 256}, k and n from 32 to 1024 on
  // one core of an AVX-512 Xeon: below 2^16 multiply-adds the call's own
  // cost decides (OpenBLAS 0.3-0.6 us, oneDNN 0.6-0.9 us); above it oneDNN
  // won every shape but those with few rows and few columns against a long
  // k (16 x 1024 x 32: 2.6x slower, 4 x 128 x 256: 1.3x).
  if (m * n * k < (int64_t{1} << 16)) return false;
  if (m >= 256 || n >= 512) return true;
  if (m >= 64) return !(n <= 64 && k >= 1024);
  return m >= 16 && n >= 128;
}

void choose(const std::string& name) {
  const Choice choice = parse(name);
  std::lock_guard<std::mutex> lock(g_mutex);
  apply(choice);
}

std::string describe_choice() {
  chosen_sgemm();
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_description;
}

}  // namespace aotishim::cpu::onednn

namespace aotishim {

void set_cpu_gemm_library(const std::string& name) { cpu::onednn::choose(name); }
std::string cpu_gemm_library() { return cpu::onednn::describe_choice(); }

}  // namespace aotishim
