// The aoti_torch_mps_* C ABI that AOTInductor-generated Metal code calls.
// Names and signatures follow PyTorch 2.13's
// torch/csrc/inductor/aoti_torch/c/shim_mps.h (shader libraries, kernel
// encoding, memory); its fallback ops come from the op table (fallback_ops.h).
// Provided on Apple platforms only, where the `mps` device is built.
//
// Memory: an mps pointer is the `contents` of a shared-storage MTLBuffer;
// any pointer inside such an allocation is mps memory. Tensors on mps have
// device type 13 (aoti_torch_device_type_mps()).
//
// Handles of shader libraries and kernel functions are opaque tokens, never
// reused: a deleted or unknown handle is an error, not a crash. A kernel
// function belongs to its library and dies with it.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "aotishim/c_shim.h"
#include "aotishim/export.h"

struct AOTIMetalKernelFunctionOpaque;
typedef struct AOTIMetalKernelFunctionOpaque* AOTIMetalKernelFunctionHandle;

struct AOTIMetalShaderLibraryOpaque;
typedef struct AOTIMetalShaderLibraryOpaque* AOTIMetalShaderLibraryHandle;

#ifdef __cplusplus
extern "C" {
#endif

// ---- shader libraries ----
// Compiles Metal source (fast math off); the compiler's message on failure.
AOTISHIM_API AOTITorchError aoti_torch_mps_create_shader_library(
    const char* metal_shader_source, AOTIMetalShaderLibraryHandle* library_handle);
AOTISHIM_API AOTITorchError aoti_torch_mps_delete_shader_library(
    AOTIMetalShaderLibraryHandle library_handle);
// The same handle for the same name of one library.
AOTISHIM_API AOTITorchError aoti_torch_mps_get_kernel_function(
    AOTIMetalShaderLibraryHandle library_handle, const char* kernel_name,
    AOTIMetalKernelFunctionHandle* function_handle);

// ---- encoding a kernel ----
// start_encoding clears the arguments; set_arg_* bind argument `idx`
// (a tensor binds its allocation's buffer at the view's byte offset; an int
// is 8 bytes, `constant long&` in the kernel); a dispatch encodes the kernel
// on the device's queue with the arguments set so far. Every tensor argument
// counts as written. Sizes of 0 threads dispatch nothing.
AOTISHIM_API AOTITorchError aoti_torch_mps_start_encoding(AOTIMetalKernelFunctionHandle func);
AOTISHIM_API AOTITorchError aoti_torch_mps_set_arg_tensor(AOTIMetalKernelFunctionHandle func,
                                                          unsigned idx, AtenTensorHandle tensor);
AOTISHIM_API AOTITorchError aoti_torch_mps_set_arg_int(AOTIMetalKernelFunctionHandle func,
                                                       unsigned idx, int64_t val);
AOTISHIM_API AOTITorchError aoti_torch_mps_dispatch_single(AOTIMetalKernelFunctionHandle func,
                                                           uint64_t length);
AOTISHIM_API AOTITorchError aoti_torch_mps_dispatch_single_with_group_size(
    AOTIMetalKernelFunctionHandle func, uint64_t length, uint64_t group_size);
AOTISHIM_API AOTITorchError aoti_torch_mps_dispatch_array(AOTIMetalKernelFunctionHandle func,
                                                          const uint64_t* length,
                                                          size_t length_size);
AOTISHIM_API AOTITorchError aoti_torch_mps_dispatch_array_with_group_size(
    AOTIMetalKernelFunctionHandle func, const uint64_t* length, size_t length_size,
    const uint64_t* group_size, size_t group_size_size);

// ---- memory ----
// One shared-storage MTLBuffer; *buffer is its contents pointer.
AOTISHIM_API AOTITorchError aoti_torch_mps_malloc(void** buffer, size_t num_bytes);
// Frees memory from aoti_torch_mps_malloc (null is a no-op).
AOTISHIM_API AOTITorchError aoti_torch_mps_free(void* ptr);
// Host copy of data_size bytes from constants_start + bytes_read to
// buffer + constant_offset, after pending GPU work on that allocation.
AOTISHIM_API AOTITorchError aoti_torch_mps_memcpy(void* buffer, size_t constant_offset,
                                                  size_t bytes_read, size_t data_size,
                                                  uint8_t* constants_start);
// data_size bytes from src_buffer + src_offset to dst_buffer + dst_offset
// (offsets in bytes). Between two mps allocations it is a command on the
// queue; with host memory on one side, a host copy after pending GPU work.
AOTISHIM_API AOTITorchError aoti_torch_mps_copy_buffer(void* src_buffer, void* dst_buffer,
                                                       size_t data_size, size_t src_offset,
                                                       size_t dst_offset);

// ---- command blocks ----
typedef void (*aoti_torch_mps_command_block_callback_t)(AOTIMetalKernelFunctionHandle func,
                                                        void* user_data);
// Calls (*(std::function<void(AOTIMetalKernelFunctionHandle)>*)user_data)(func).
AOTISHIM_API void aoti_torch_mps_shared_callback(AOTIMetalKernelFunctionHandle func,
                                                 void* user_data);
// Runs callback(func, user_data). Fails if any shim called on func inside
// fails; generated code ignores these error codes, so the failure is also
// raised by the device's next synchronize or host access.
AOTISHIM_API AOTITorchError aoti_torch_mps_run_command_block(
    AOTIMetalKernelFunctionHandle func, aoti_torch_mps_command_block_callback_t callback,
    void* user_data);

// The fallback ops (aoti_torch_mps_mm_out, ...) are declared from the op
// table in aotishim/fallback_ops.h.

#ifdef __cplusplus
}  // extern "C"
#endif
