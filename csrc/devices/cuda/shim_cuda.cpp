// The CUDA shims generated code calls. Guards are validated through a
// registry of live guards, so a stale or double-deleted guard is an error
// code with a message, never a crash.
#include <cuda_runtime_api.h>

#include <mutex>
#include <unordered_set>

#include "aotishim/c_shim_cuda.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"

using namespace aotishim;
using namespace aotishim::cuda;

struct CUDAGuardOpaque {
  int original = -1;  // the device current when the guard was made
};

struct CUDAStreamGuardOpaque {
  int32_t device_index = 0;
  int original_device = -1;
  StreamOverride original_stream;
};

namespace {

struct GuardRegistry {
  std::mutex mutex;
  std::unordered_set<const void*> live;
};

GuardRegistry& guards() {
  static GuardRegistry* r = new GuardRegistry();  // outlives static destruction
  return *r;
}

void add_guard(const void* g) {
  std::lock_guard<std::mutex> lock(guards().mutex);
  guards().live.insert(g);
}

void check_guard(const void* g, const char* what) {
  AOTISHIM_CHECK(g != nullptr, what, " is null");
  std::lock_guard<std::mutex> lock(guards().mutex);
  AOTISHIM_CHECK(guards().live.count(g) == 1, what, " is not a live guard (deleted twice?)");
}

void remove_guard(const void* g) {
  std::lock_guard<std::mutex> lock(guards().mutex);
  guards().live.erase(g);
}

void check_index(int32_t device_index) {
  int count = 0;
  AOTISHIM_CUDA_CHECK(cudaGetDeviceCount(&count));
  AOTISHIM_CHECK(device_index >= 0 && device_index < count, "cuda device ", device_index,
                 " does not exist (", count, " present)");
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index, CUDAGuardHandle* ret_guard) {
  return guard(__func__, [&] {
    require_out(ret_guard, "ret_guard");
    auto g = std::make_unique<CUDAGuardOpaque>();
    AOTISHIM_CUDA_CHECK(cudaGetDevice(&g->original));
    if (device_index >= 0) {  // -1: keep the current device
      check_index(device_index);
      AOTISHIM_CUDA_CHECK(cudaSetDevice(device_index));
    }
    add_guard(g.get());
    *ret_guard = g.release();
  });
}

AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle g, int32_t device_index) {
  return guard(__func__, [&] {
    check_guard(g, "cuda guard");
    check_index(device_index);
    AOTISHIM_CUDA_CHECK(cudaSetDevice(device_index));
  });
}

AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle g) {
  return guard(__func__, [&] {
    check_guard(g, "cuda guard");
    remove_guard(g);
    int original = g->original;
    delete g;
    AOTISHIM_CUDA_CHECK(cudaSetDevice(original));
  });
}

AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream, int32_t device_index,
                                                   CUDAStreamGuardHandle* ret_guard) {
  return guard(__func__, [&] {
    require_out(ret_guard, "ret_guard");
    check_index(device_index);
    auto g = std::make_unique<CUDAStreamGuardOpaque>();
    g->device_index = device_index;
    AOTISHIM_CUDA_CHECK(cudaGetDevice(&g->original_device));
    AOTISHIM_CUDA_CHECK(cudaSetDevice(device_index));
    g->original_stream = exchange_stream_override(
        device_index, StreamOverride{true, static_cast<cudaStream_t>(stream)});
    add_guard(g.get());
    *ret_guard = g.release();
  });
}

AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle g) {
  return guard(__func__, [&] {
    check_guard(g, "cuda stream guard");
    remove_guard(g);
    exchange_stream_override(g->device_index, g->original_stream);
    int original = g->original_device;
    delete g;
    AOTISHIM_CUDA_CHECK(cudaSetDevice(original));
  });
}

AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index, void** ret_stream) {
  return guard(__func__, [&] {
    require_out(ret_stream, "ret_stream");
    if (device_index < 0) AOTISHIM_CUDA_CHECK(cudaGetDevice(&device_index));
    *ret_stream = static_cast<void*>(current_stream(device_index));
  });
}

}  // extern "C"
