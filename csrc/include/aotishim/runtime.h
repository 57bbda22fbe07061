// aotishim's C++ API for native runners (and the Python bindings, which use
// nothing else): memory scopes and statistics, device-generic operations on
// tensor handles, and host transfers. Errors throw aotishim::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "aotishim/export.h"

namespace aotishim {

// Throws aotishim::Error with the last error message if err is a failure.
AOTISHIM_API void check(AOTITorchError err);

// ---- devices ----
// Devices usable here: "cpu", "sim", and "cuda:N" / "mps" where built and present.
AOTISHIM_API std::vector<std::string> devices();
// Waits for all work queued on a device ("cpu", "sim", "cuda:0", ...).
AOTISHIM_API void synchronize(const std::string& device);
// A device name ("cpu", "sim", "cuda:1", "mps") as the ABI's (device_type,
// device_index); the cpu's index is -1, as torch passes it. Throws
// aotishim::Error "invalid device ..." for anything else ("gpu", "cuda:", "cpu:1").
struct AbiDevice {
  int32_t type = 0;
  int32_t index = -1;
};
AOTISHIM_API AbiDevice parse_device_abi(const std::string& device);

// ---- scopes ----
// Every tensor belongs to the scope current on its thread when it was made;
// the process default scope serves callers that never make one.
AOTISHIM_API uint64_t create_scope(const std::string& name);
// Releases what is left in the scope and forgets it; returns a description
// of each released tensor (leaks, from the owner's point of view).
AOTISHIM_API std::vector<std::string> destroy_scope(uint64_t scope);
AOTISHIM_API uint64_t current_scope_id();

class AOTISHIM_API ScopeGuard {
 public:
  explicit ScopeGuard(uint64_t scope);
  ~ScopeGuard();
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  uint64_t previous_;
};

// Empties the current scope (deleting its tensors) and leaves no record of
// it behind. Returns how many tensors it deleted.
AOTISHIM_API size_t cleanup_memory();

// ---- statistics ----
struct ScopeMemory {
  uint64_t id = 0;
  std::string name;
  size_t tensors = 0;
  size_t owned_storages = 0;
  size_t owned_bytes = 0;
  size_t borrowed_storages = 0;
};
struct DeviceMemory {
  std::string device;
  size_t allocations = 0;  // live owned allocations
  size_t bytes = 0;
  uint64_t synchronizes = 0;
  uint64_t hazards = 0;
  uint64_t commands = 0;
};
struct MemoryStats {
  size_t live_tensors = 0;
  uint64_t released_handles = 0;  // handles ever deleted, process-wide
  std::vector<ScopeMemory> scopes;
  std::vector<DeviceMemory> devices;
};
AOTISHIM_API MemoryStats memory_stats();
AOTISHIM_API bool is_live_handle(AtenTensorHandle handle);

// How cpu runs size their OpenMP team: the calling threads' recent CPU share
// (CPU time over wall time, decayed over ~50 ms of runs) and the threads the
// last run used. Below a share of 0.7 a run uses that share of its thread's
// OpenMP setting (other processes hold the cores); AOTISHIM_CPU_TEAM=fixed
// keeps the setting.
struct CpuTeamStats {
  double recent_cpu_share = 1.0;
  int last_run_threads = 0;  // 0: no cpu run yet
};
AOTISHIM_API CpuTeamStats cpu_team_stats();

// ---- cpu GEMM library ----
// float32 GEMMs on the cpu run on oneDNN's sgemm where it loads (the
// onednn-cpu-gomp wheel, or AOTISHIM_ONEDNN_PATH), else on the BLAS
// (OpenBLAS; Accelerate on macOS). `name`: "auto" (the default, also read
// from AOTISHIM_CPU_GEMM), "onednn" (throws, naming every place tried, when
// it does not load) or "blas". Other dtypes always use the BLAS.
AOTISHIM_API void set_cpu_gemm_library(const std::string& name);
// What float32 cpu GEMMs use now: "oneDNN 3.2.0 (OpenMP) at PATH" or "blas".
AOTISHIM_API std::string cpu_gemm_library();

// ---- random numbers ----
// The random ops (rand, randn, dropout, ...) and the random kernels Inductor
// generates (which it seeds through randint) draw from one process-wide
// generator (mt19937, 64-bit; its streams are not torch's), seeded with
// torch's default seed (67280421310721) until one of these is called. The
// same seed and the same calls in the same order give the same numbers.
AOTISHIM_API void manual_seed(uint64_t seed);
// Seeds it from the system's entropy source and returns that seed.
AOTISHIM_API uint64_t seed();
// The seed it was last seeded with.
AOTISHIM_API uint64_t initial_seed();

// ---- device-generic operations ----
// The fallback ops have device-generic C entries, aotishim_<op> (for example
// aotishim_mm_out), declared from the op table in aotishim/fallback_ops.h; wrap
// them in check() for exceptions.

// ---- host transfers ----
struct TensorInfo {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  int32_t dtype = 0;
  std::string device;
  void* data_ptr = nullptr;
  size_t storage_nbytes = 0;
  bool owns_storage = false;
};
AOTISHIM_API TensorInfo tensor_info(AtenTensorHandle handle);

// Copies the tensor's elements, packed row-major, into host memory at dst
// (numel * itemsize bytes). Waits only for work that touches its memory.
AOTISHIM_API void copy_to_host(AtenTensorHandle src, void* dst);

// A tensor borrowing host memory of `data` (never freed by aotishim);
// `keepalive` is held until the last view of that storage dies.
AOTISHIM_API AtenTensorHandle borrow_host_memory(void* data, const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 int32_t dtype,
                                                 std::shared_ptr<void> keepalive);

// A new tensor on `device` holding a copy of strided host data.
AOTISHIM_API AtenTensorHandle copy_from_host(const void* data, const std::vector<int64_t>& sizes,
                                             const std::vector<int64_t>& strides_elems,
                                             int32_t dtype, const std::string& device);

// ---- memory shared with other libraries (DLPack) ----
// A tensor borrowing memory on `device` ("cpu", "cuda:0", ...) that aotishim
// never frees: element [0, ...] at data + storage_offset * itemsize, strides
// in elements (empty: packed). `keepalive` is released when the last view of
// that storage dies.
AOTISHIM_API AtenTensorHandle borrow_memory(const std::string& device, void* data,
                                            const std::vector<int64_t>& sizes,
                                            const std::vector<int64_t>& strides,
                                            int64_t storage_offset, int32_t dtype,
                                            std::shared_ptr<void> keepalive);
// The memory behind a tensor, kept alive while the result lives, whatever
// becomes of the handle or its scope (memory exported to another library).
AOTISHIM_API std::shared_ptr<void> retain_storage(AtenTensorHandle handle);

// Streams of other libraries, as integers in DLPack's encoding (CUDA: a
// cudaStream_t, 1 the legacy and 2 the per-thread default stream). On
// devices without streams these return 0 and do nothing.
// The stream this thread's next work on `device` goes to.
AOTISHIM_API intptr_t device_stream(const std::string& device);
// Later work on `stream` waits for the work queued on `device` so far.
AOTISHIM_API void order_stream_after_device(const std::string& device, intptr_t stream);
// Later work on `device` waits for the work queued on `stream` so far.
AOTISHIM_API void order_device_after_stream(const std::string& device, intptr_t stream);

}  // namespace aotishim
