// searchsorted: one thread per element of self, bisecting its line of the
// sorted sequence (read through the sorter when there is one) exactly as
// torch cuda's lower_bound / upper_bound do, the elements compared as
// numbers of their dtype (the 16-bit floats as float, exactly).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/typed_values.cuh"
#include "devices/cuda/searchsorted_kernels.h"

namespace aotishim {
namespace cuda {

namespace {


template <typename T, typename Out>
__global__ void search_kernel(SearchLaunch L, int64_t total) {
  const T* seq = static_cast<const T*>(L.sequence);
  const T* self = static_cast<const T*>(L.self);
  Out* out = static_cast<Out*>(L.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    int64_t self_off = 0, out_off = 0, seq_off = 0, sorter_off = 0, rest = j;
    for (int d = L.ndim - 1; d >= 0; --d) {
      const int64_t i = rest % L.sizes[d];
      rest /= L.sizes[d];
      self_off += i * L.self_strides[d];
      out_off += i * L.out_strides[d];
      seq_off += i * L.seq_strides[d];
      sorter_off += i * L.sorter_strides[d];
    }
    const auto v = number(self[self_off]);
    int64_t start = 0, end = L.n;
    while (start < end) {
      const int64_t mid = start + ((end - start) >> 1);
      const int64_t at = L.sorter ? L.sorter[sorter_off + mid * L.sorter_step] : mid;
      const auto x = number(seq[seq_off + at * L.seq_step]);
      // written with negations so that NaN compares exactly as torch's does
      const bool below = L.right ? !(x > v) : !(x >= v);
      if (below) start = mid + 1;
      else end = mid;
    }
    out[out_off] = static_cast<Out>(start);
  }
}

struct Walk {
  int ndim;
  int64_t sizes[kMaxCopyDims];
  int64_t strides[kMaxCopyDims];
};

__global__ void sorter_check_kernel(const int64_t* sorter, Walk w, int64_t total, int64_t n,
                                    int* bad) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    int64_t off = 0, rest = j;
    for (int d = w.ndim - 1; d >= 0; --d) {
      off += (rest % w.sizes[d]) * w.strides[d];
      rest /= w.sizes[d];
    }
    const int64_t s = sorter[off];
    if (s < 0 || s >= n) atomicOr(bad, 1);
  }
}

template <typename T>
void search(const SearchLaunch& L, int64_t total, cudaStream_t stream) {
  if (L.out_int32) search_kernel<T, int32_t><<<blocks_for(total), kThreads, 0, stream>>>(L, total);
  else search_kernel<T, int64_t><<<blocks_for(total), kThreads, 0, stream>>>(L, total);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_searchsorted(const SearchLaunch& L, cudaStream_t stream) {
  AOTISHIM_CHECK(L.ndim >= 1 && L.ndim <= kMaxCopyDims, "cuda searchsorted: 1 to ", kMaxCopyDims,
                 " dimensions, got ", L.ndim);
  int64_t total = 1;
  for (int d = 0; d < L.ndim; ++d) total *= L.sizes[d];
  if (total == 0) return;
  discard_earlier_error();
  switch (L.dtype) {
    case DType::Bool: return search<uint8_t>(L, total, stream);
    case DType::UInt8: return search<uint8_t>(L, total, stream);
    case DType::Int8: return search<int8_t>(L, total, stream);
    case DType::Int16: return search<int16_t>(L, total, stream);
    case DType::Int32: return search<int32_t>(L, total, stream);
    case DType::Int64: return search<int64_t>(L, total, stream);
    case DType::Float16: return search<__half>(L, total, stream);
    case DType::BFloat16: return search<__nv_bfloat16>(L, total, stream);
    case DType::Float32: return search<float>(L, total, stream);
    case DType::Float64: return search<double>(L, total, stream);
    default: break;
  }
  fail(str("cuda searchsorted supports bool, uint8, int8..int64 and the real floating types, "
           "not ", dtype_name(L.dtype)));
}

void launch_sorter_check(const int64_t* sorter, const int64_t* sizes, const int64_t* strides,
                         int ndim, int64_t n, int* bad, cudaStream_t stream) {
  AOTISHIM_CHECK(ndim >= 1 && ndim <= kMaxCopyDims, "cuda searchsorted: 1 to ", kMaxCopyDims,
                 " dimensions, got ", ndim);
  Walk w{ndim, {}, {}};
  int64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    w.sizes[d] = sizes[d];
    w.strides[d] = strides[d];
    total *= sizes[d];
  }
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(bad, 0, sizeof(int), stream));
  if (total == 0) return;
  sorter_check_kernel<<<blocks_for(total), kThreads, 0, stream>>>(sorter, w, total, n, bad);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
