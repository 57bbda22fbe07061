// The aoti_torch_* C ABI that aotishim provides to AOTInductor-compiled models
// (compiled with aot_inductor.link_libtorch=False). Names, signatures and enum
// values follow PyTorch's torch/csrc/inductor/aoti_torch/c/shim.h (2.13, 2.14
// and 2.15 declare the same entry points) so that generated code links
// against this library unchanged.
#pragma once

#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#include "aotishim/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t AOTITorchError;
#define AOTI_TORCH_SUCCESS 0
#define AOTI_TORCH_FAILURE 1

struct AtenTensorOpaque;
typedef struct AtenTensorOpaque* AtenTensorHandle;
// torch's generator objects; aotishim has none (one process-wide generator),
// so the random ops take only null ones.
struct AtenGeneratorOpaque;
typedef struct AtenGeneratorOpaque* AtenGeneratorHandle;

struct AOTIProxyExecutorOpaque;
typedef struct AOTIProxyExecutorOpaque* AOTIProxyExecutorHandle;

// ---- constants (c10 DeviceType / ScalarType / Layout numbers) ----
AOTISHIM_API int32_t aoti_torch_device_type_cpu(void);
AOTISHIM_API int32_t aoti_torch_device_type_cuda(void);
AOTISHIM_API int32_t aoti_torch_device_type_mps(void);
AOTISHIM_API int32_t aoti_torch_device_type_privateuse1(void);

AOTISHIM_API int32_t aoti_torch_dtype_float16(void);
AOTISHIM_API int32_t aoti_torch_dtype_bfloat16(void);
AOTISHIM_API int32_t aoti_torch_dtype_float32(void);
AOTISHIM_API int32_t aoti_torch_dtype_float64(void);
AOTISHIM_API int32_t aoti_torch_dtype_uint8(void);
AOTISHIM_API int32_t aoti_torch_dtype_int8(void);
AOTISHIM_API int32_t aoti_torch_dtype_int16(void);
AOTISHIM_API int32_t aoti_torch_dtype_int32(void);
AOTISHIM_API int32_t aoti_torch_dtype_int64(void);
AOTISHIM_API int32_t aoti_torch_dtype_bool(void);
AOTISHIM_API int32_t aoti_torch_dtype_uint16(void);
AOTISHIM_API int32_t aoti_torch_dtype_uint32(void);
AOTISHIM_API int32_t aoti_torch_dtype_uint64(void);
AOTISHIM_API int32_t aoti_torch_dtype_complex32(void);
AOTISHIM_API int32_t aoti_torch_dtype_complex64(void);
AOTISHIM_API int32_t aoti_torch_dtype_complex128(void);
AOTISHIM_API int32_t aoti_torch_dtype_float8_e5m2(void);
AOTISHIM_API int32_t aoti_torch_dtype_float8_e4m3fn(void);
AOTISHIM_API int32_t aoti_torch_dtype_float8_e5m2fnuz(void);
AOTISHIM_API int32_t aoti_torch_dtype_float8_e4m3fnuz(void);
AOTISHIM_API int32_t aoti_torch_dtype_float8_e8m0fnu(void);
AOTISHIM_API int32_t aoti_torch_dtype_float4_e2m1fn_x2(void);
AOTISHIM_API size_t aoti_torch_dtype_element_size(int32_t dtype);

AOTISHIM_API int32_t aoti_torch_layout_strided(void);

// The torch release whose shim.h these entry points follow, as torch encodes
// TORCH_ABI_VERSION: major, minor and patch in the top three bytes, the ABI
// tag in the low bytes. aoti_torch_abi_version() returns it.
#define AOTISHIM_TORCH_ABI_VERSION ((2ULL << 56) | (15ULL << 48) | (0ULL << 40) | 0ULL)
AOTISHIM_API uint64_t aoti_torch_abi_version(void);

AOTISHIM_API bool aoti_torch_grad_mode_is_enabled(void);
AOTISHIM_API void aoti_torch_grad_mode_set_enabled(bool enabled);

AOTISHIM_API void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg);
// A failed check (cond false) fails the model call that made it: it throws
// (the container turns that into an error code) and sets the last error.
// Never call it with cond false from C, or from outside a model's run.
AOTISHIM_API void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line,
                                   const char* msg);

// ---- tensor getters ----
AOTISHIM_API AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret_data_ptr);
AOTISHIM_API AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret_size);
AOTISHIM_API AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret_dim);
AOTISHIM_API AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret_numel);
AOTISHIM_API AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret_sizes);
AOTISHIM_API AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret_size);
AOTISHIM_API AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret_strides);
AOTISHIM_API AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret_stride);
AOTISHIM_API AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret_dtype);
AOTISHIM_API AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret_device_type);
AOTISHIM_API AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret_device_index);
AOTISHIM_API AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret_layout);
AOTISHIM_API AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret_storage_offset);
AOTISHIM_API AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret_is_contiguous);
AOTISHIM_API AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret_is_defined);

// ---- tensor creation, views, lifetime ----
AOTISHIM_API AOTITorchError aoti_torch_create_tensor_from_blob(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret);
AOTISHIM_API AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret, int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size);
AOTISHIM_API AOTITorchError aoti_torch_empty_strided(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret_new_tensor);
// A cpu tensor (pinned memory is host memory; only device type cpu is taken).
AOTISHIM_API AOTITorchError aoti_torch_empty_strided_pinned(
    int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr, int32_t dtype,
    int32_t device_type, int32_t device_index, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor);
// 0-dimensional cpu tensors holding one number (torch's at::scalar_tensor).
// The complex ones take c10::complex<float/double> by value: two floats
// (doubles) aligned to twice their size, which these structs repeat.
#ifdef __cplusplus
#define AOTISHIM_ALIGNAS(n) alignas(n)
#else
#define AOTISHIM_ALIGNAS(n) _Alignas(n)
#endif
typedef struct { AOTISHIM_ALIGNAS(8) float real; float imag; } AOTIComplex64;
typedef struct { AOTISHIM_ALIGNAS(16) double real; double imag; } AOTIComplex128;
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_float32(float value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_float64(double value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_uint8(uint8_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_uint16(uint16_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_uint32(uint32_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_uint64(uint64_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_int8(int8_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_int16(int16_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_int32(int32_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_int64(int64_t value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_bool(bool value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_complex64(AOTIComplex64 value, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_scalar_to_tensor_complex128(AOTIComplex128 value, AtenTensorHandle* ret_new_tensor);
// A view of self's storage; offset_increment is added to self's own storage
// offset (torch's _reinterpret_tensor), it does not replace it.
AOTISHIM_API AOTITorchError aoti_torch__reinterpret_tensor(
    AtenTensorHandle self, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t offset_increment, AtenTensorHandle* ret_new_tensor);
AOTISHIM_API AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig_handle,
                                                         AtenTensorHandle* new_handle);
AOTISHIM_API AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src,
                                                          AtenTensorHandle* ret_dst);
AOTISHIM_API AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret);
AOTISHIM_API AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self,
                                                              AtenTensorHandle* ret);
AOTISHIM_API AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src,
                                             int32_t non_blocking);

// ---- ops without a C shim (the proxy executor) ----
// A placeholder handle for a proxy-executor call's result: aoti_torch_is_defined
// says false (it reads as an empty cpu tensor) until the call assigns the result.
AOTISHIM_API AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret);
// Runs extern-kernel node `extern_node_index` of the model's package: its
// dynamic arguments flattened (ints, then the input tensors followed by the
// output placeholders), the rest read from the package's node (see
// aotishim/custom_ops.h). proxy_executor is what the runner gave the model.
AOTISHIM_API AOTITorchError aoti_torch_proxy_executor_call_function(
    AOTIProxyExecutorHandle proxy_executor, int extern_node_index, int num_ints,
    int64_t* flatten_int_args, int num_tensors, AtenTensorHandle* flatten_tensor_args);

// ---- aotishim's own additions ----
// The message of the last failure on this thread ("" if none). Valid until the
// next failing call on this thread.
AOTISHIM_API const char* aotishim_last_error(void);

#ifdef __cplusplus
}  // extern "C"
#endif

// The fallback ops (aoti_torch_{cpu,cuda,mps}_<op>, aotishim_<op>), from the op table.
#include "aotishim/fallback_ops.h"
