// sort: keys are made canonical first (every NaN the quiet NaN of its sign,
// so, in the radix sort's bit order as in torch cuda's, a positive NaN sorts
// above +inf and a negative one below -inf; -0.0 made 0.0, so the two compare
// equal and keep their order), CUB's radix sort (stable, ascending or
// descending; row_radix_sort.cuh) orders them with their positions, and the
// values are then gathered from the input by those positions, so each keeps
// its own bits.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/row_radix_sort.cuh"
#include "devices/cuda/sort_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {


template <typename T> __device__ __forceinline__ T canonical(T v) { return v; }
template <> __device__ __forceinline__ float canonical(float v) {
  if (isnan(v)) return __int_as_float(static_cast<int>(signbit(v) ? 0xffc00000u : 0x7fc00000u));
  return v == 0.0f ? 0.0f : v;
}
template <> __device__ __forceinline__ double canonical(double v) {
  if (isnan(v))
    return __longlong_as_double(static_cast<long long>(
        signbit(v) ? 0xfff8000000000000ull : 0x7ff8000000000000ull));
  return v == 0.0 ? 0.0 : v;
}
// The 16-bit types by their bits: on the H200, converting a float16 NaN to
// float dropped its sign bit, and the sign decides where the NaN sorts.
__device__ __forceinline__ unsigned short canonical_bits16(unsigned short b, unsigned short exp,
                                                          unsigned short quiet) {
  if ((b & exp) == exp && (b & ~exp & 0x7fff) != 0) return (b & 0x8000) ? (quiet | 0x8000) : quiet;
  return (b & 0x7fff) == 0 ? 0 : b;
}
template <> __device__ __forceinline__ __half canonical(__half v) {
  return __ushort_as_half(canonical_bits16(__half_as_ushort(v), 0x7c00, 0x7e00));
}
template <> __device__ __forceinline__ __nv_bfloat16 canonical(__nv_bfloat16 v) {
  return __ushort_as_bfloat16(canonical_bits16(__bfloat16_as_ushort(v), 0x7f80, 0x7fc0));
}

template <typename T>
__global__ void prepare_kernel(const T* in, T* keys, int64_t* idx, int64_t total, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    keys[i] = canonical(in[i]);
    idx[i] = i % n;
  }
}

template <typename T>
__global__ void gather_kernel(const T* in, const int64_t* idx, T* out, int64_t total, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step)
    out[i] = in[(i / n) * n + idx[i]];
}

template <typename T>
void sort_rows(const void* data, void* values_out, int64_t* idx_out, int64_t rows, int64_t n,
               bool descending, const SortScratch& scratch, cudaStream_t stream) {
  const int64_t total = rows * n;
  const T* in = static_cast<const T*>(data);
  T* keys = static_cast<T*>(scratch(static_cast<size_t>(total) * sizeof(T)));
  T* sorted_keys = static_cast<T*>(scratch(static_cast<size_t>(total) * sizeof(T)));
  int64_t* idx = static_cast<int64_t*>(scratch(static_cast<size_t>(total) * sizeof(int64_t)));
  prepare_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(in, keys, idx, total, n);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  size_t bytes = 0;
  auto sort = [&](void* temp) {
    return sort_rows_by_key(temp, bytes, keys, sorted_keys, idx, idx_out, rows, n, descending,
                            stream);
  };
  AOTISHIM_CUDA_CHECK(sort(nullptr));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(sort(temp));
  gather_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(in, idx_out,
                                                               static_cast<T*>(values_out), total, n);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_sort(DType dtype, const void* data, void* values_out, int64_t* idx_out, int64_t rows,
                 int64_t n, bool descending, const SortScratch& scratch, cudaStream_t stream) {
  if (rows == 0 || n == 0) return;
  AOTISHIM_CHECK(rows * n <= INT_MAX, "cuda sort sorts at most ", INT_MAX,
                 " elements at once, got ", rows * n);
  discard_earlier_error();
  switch (dtype) {
#define AOTISHIM_SORT(dt, T) \
  case dt: return sort_rows<T>(data, values_out, idx_out, rows, n, descending, scratch, stream);
    AOTISHIM_SORT(DType::Bool, uint8_t)
    AOTISHIM_SORT(DType::UInt8, uint8_t)
    AOTISHIM_SORT(DType::Int8, int8_t)
    AOTISHIM_SORT(DType::Int16, int16_t)
    AOTISHIM_SORT(DType::Int32, int32_t)
    AOTISHIM_SORT(DType::Int64, int64_t)
    AOTISHIM_SORT(DType::Float16, __half)
    AOTISHIM_SORT(DType::BFloat16, __nv_bfloat16)
    AOTISHIM_SORT(DType::Float32, float)
    AOTISHIM_SORT(DType::Float64, double)
#undef AOTISHIM_SORT
    default: break;
  }
  fail(str("cuda sort supports bool, uint8, int8..int64 and the real floating types, not ",
           dtype_name(dtype)));
}

}  // namespace cuda
}  // namespace aotishim
