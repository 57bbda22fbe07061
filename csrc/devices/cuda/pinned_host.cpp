// Page-locked host memory for aoti_torch_empty_strided_pinned: libaotishim
// looks these up by name in the loaded plugin (find_backend_symbol).
#include <cuda_runtime_api.h>

#include <cstddef>

extern "C" {

// 0 with *out set on success; nonzero, with nothing allocated, when the
// runtime gives no page-locked memory (no GPU, no driver, out of it).
__attribute__((visibility("default"))) int aotishim_cuda_host_alloc(size_t nbytes, void** out) {
  if (!out) return 1;
  *out = nullptr;
  // Portable: page-locked for every device's context, not just the current one.
  if (cudaHostAlloc(out, nbytes > 0 ? nbytes : 1, cudaHostAllocPortable) != cudaSuccess) {
    cudaGetLastError();
    *out = nullptr;
    return 1;
  }
  return 0;
}

__attribute__((visibility("default"))) void aotishim_cuda_host_free(void* p) {
  if (!p) return;
  cudaFreeHost(p);
  cudaGetLastError();  // at process exit the runtime may be gone: nothing to report
}

}  // extern "C"
