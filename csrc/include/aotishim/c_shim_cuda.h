// The CUDA part of the aoti_torch_* C ABI, provided by the cuda backend
// (libaotishim_cuda, loaded beside libaotishim). Names, signatures and
// numbers follow PyTorch's shim headers so generated CUDA code links against
// it unchanged.
#pragma once

#include "aotishim/c_shim.h"

#ifdef __cplusplus
extern "C" {
#endif

// ---- device and stream guards, the current stream ----
struct CUDAGuardOpaque;
typedef struct CUDAGuardOpaque* CUDAGuardHandle;
struct CUDAStreamGuardOpaque;
typedef struct CUDAStreamGuardOpaque* CUDAStreamGuardHandle;

// Makes device_index the current CUDA device until the guard is deleted.
AOTISHIM_API AOTITorchError aoti_torch_create_cuda_guard(int32_t device_index,
                                                         CUDAGuardHandle* ret_guard);
AOTISHIM_API AOTITorchError aoti_torch_delete_cuda_guard(CUDAGuardHandle guard);
AOTISHIM_API AOTITorchError aoti_torch_cuda_guard_set_index(CUDAGuardHandle guard,
                                                            int32_t device_index);
// Makes `stream` the current stream of device_index (and the device
// current) until the guard is deleted; aotishim's work goes on it meanwhile.
AOTISHIM_API AOTITorchError aoti_torch_create_cuda_stream_guard(void* stream,
                                                                int32_t device_index,
                                                                CUDAStreamGuardHandle* ret_guard);
AOTISHIM_API AOTITorchError aoti_torch_delete_cuda_stream_guard(CUDAStreamGuardHandle guard);
// This thread's current stream for device_index (a cudaStream_t).
AOTISHIM_API AOTITorchError aoti_torch_get_current_cuda_stream(int32_t device_index,
                                                               void** ret_stream);

#ifdef __cplusplus
}  // extern "C"
#endif
