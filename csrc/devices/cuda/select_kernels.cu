// topk's row sort and nonzero's selection on CUB, shipped with the CUDA
// toolkit. NaN keys: CUB orders floats by their bits, which puts a NaN with
// the sign bit set below -inf; keys are canonicalised to the positive NaN
// first so every NaN sorts as the largest value, as torch orders them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cub/device/device_select.cuh>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/row_radix_sort.cuh"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/select_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 ? 65535 : b));
}

template <typename T> __device__ __forceinline__ bool is_nan(T v) { return false; }
template <> __device__ __forceinline__ bool is_nan(float v) { return isnan(v); }
template <> __device__ __forceinline__ bool is_nan(double v) { return isnan(v); }
template <> __device__ __forceinline__ bool is_nan(__half v) { return __hisnan(v); }
template <> __device__ __forceinline__ bool is_nan(__nv_bfloat16 v) { return __hisnan(v); }

template <typename T> __device__ __forceinline__ T canonical_nan();
template <> __device__ __forceinline__ float canonical_nan() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double canonical_nan() {
  return __longlong_as_double(0x7ff8000000000000LL);
}
template <> __device__ __forceinline__ __half canonical_nan() { return __ushort_as_half(0x7e00); }
template <> __device__ __forceinline__ __nv_bfloat16 canonical_nan() {
  return __ushort_as_bfloat16(0x7fc0);
}
template <> __device__ __forceinline__ int32_t canonical_nan() { return 0; }
template <> __device__ __forceinline__ int64_t canonical_nan() { return 0; }

// keys = keys_in with NaNs canonical; idx = position within the row.
template <typename T>
__global__ void prepare_kernel(const T* keys_in, T* keys, int64_t* idx, int64_t total, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const T v = keys_in[i];
    keys[i] = is_nan(v) ? canonical_nan<T>() : v;
    idx[i] = i % n;
  }
}

template <typename T>
void sort_rows(const void* keys_in, void* keys_out, int64_t* idx_out, int64_t rows, int64_t n,
               bool descending, const Scratch& scratch, cudaStream_t stream) {
  const int64_t total = rows * n;
  T* keys = static_cast<T*>(scratch(static_cast<size_t>(total) * sizeof(T)));
  int64_t* idx = static_cast<int64_t*>(scratch(static_cast<size_t>(total) * sizeof(int64_t)));
  prepare_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<const T*>(keys_in),
                                                                  keys, idx, total, n);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  size_t bytes = 0;
  auto sort = [&](void* temp) {
    return sort_rows_by_key(temp, bytes, keys, static_cast<T*>(keys_out), idx, idx_out, rows, n,
                            descending, stream);
  };
  AOTISHIM_CUDA_CHECK(sort(nullptr));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(sort(temp));
}

template <typename T>
struct NonzeroAt {
  const T* data;
  __device__ bool operator()(int64_t i) const { return data[i] != T(0); }
};
template <>
struct NonzeroAt<__half> {
  const __half* data;
  __device__ bool operator()(int64_t i) const { return __half2float(data[i]) != 0.0f; }
};
template <>
struct NonzeroAt<__nv_bfloat16> {
  const __nv_bfloat16* data;
  __device__ bool operator()(int64_t i) const { return __bfloat162float(data[i]) != 0.0f; }
};

template <typename T>
void nonzero_positions(const void* data, int64_t numel, int64_t* positions, int64_t* count,
                       const Scratch& scratch, cudaStream_t stream) {
  NonzeroAt<T> pred{static_cast<const T*>(data)};
  thrust::counting_iterator<int64_t> in(0);
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(
      cub::DeviceSelect::If(nullptr, bytes, in, positions, count, numel, pred, stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceSelect::If(temp, bytes, in, positions, count, numel, pred, stream));
}

struct UnravelShape {
  int ndim;
  int64_t sizes[kMaxCopyDims];
};

__global__ void unravel_kernel(const int64_t* positions, int64_t count, UnravelShape s,
                               int64_t* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += step) {
    int64_t p = positions[i];
    for (int d = s.ndim - 1; d >= 0; --d) {
      out[d * count + i] = p % s.sizes[d];
      p /= s.sizes[d];
    }
  }
}

}  // namespace

void launch_sort_rows(DType dtype, const void* keys_in, void* keys_out, int64_t* idx_out,
                      int64_t rows, int64_t n, bool descending, const Scratch& scratch,
                      cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  AOTISHIM_CHECK(rows * n <= INT_MAX, "cuda topk sorts at most ", INT_MAX,
                 " elements at once, got ", rows * n);
  switch (dtype) {
    case DType::Float32: return sort_rows<float>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    case DType::Float64: return sort_rows<double>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    case DType::Float16: return sort_rows<__half>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    case DType::BFloat16: return sort_rows<__nv_bfloat16>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    case DType::Int32: return sort_rows<int32_t>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    case DType::Int64: return sort_rows<int64_t>(keys_in, keys_out, idx_out, rows, n, descending, scratch, stream);
    default: break;
  }
  fail(str("cuda topk supports float32, float64, float16, bfloat16, int32 and int64, not ",
           dtype_name(dtype)));
}

void launch_nonzero_positions(DType dtype, const void* data, int64_t numel,
                              int64_t* positions_out, int64_t* count_out,
                              const Scratch& scratch, cudaStream_t stream) {
  switch (dtype) {
    case DType::Bool:
    case DType::UInt8: return nonzero_positions<uint8_t>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Int8: return nonzero_positions<int8_t>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Int16: return nonzero_positions<int16_t>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Int32: return nonzero_positions<int32_t>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Int64: return nonzero_positions<int64_t>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Float32: return nonzero_positions<float>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Float64: return nonzero_positions<double>(data, numel, positions_out, count_out, scratch, stream);
    case DType::Float16: return nonzero_positions<__half>(data, numel, positions_out, count_out, scratch, stream);
    case DType::BFloat16: return nonzero_positions<__nv_bfloat16>(data, numel, positions_out, count_out, scratch, stream);
    default: break;  // complex and the wide unsigned types
  }
  fail(str("cuda nonzero: unsupported dtype ", dtype_name(dtype)));
}

void launch_unravel(const int64_t* positions, int64_t count, const int64_t* sizes, int ndim,
                    int64_t* out, cudaStream_t stream) {
  if (count == 0 || ndim == 0) return;
  AOTISHIM_CHECK(ndim <= kMaxCopyDims, "cuda nonzero supports up to ", kMaxCopyDims,
                 " dimensions, got ", ndim);
  UnravelShape s{ndim, {}};
  for (int d = 0; d < ndim; ++d) s.sizes[d] = sizes[d];
  unravel_kernel<<<blocks_for(count), kThreads, 0, stream>>>(positions, count, s, out);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
