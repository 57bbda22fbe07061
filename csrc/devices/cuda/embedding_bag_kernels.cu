// _embedding_bag on cuda, as torch's cuda kernel computes it: one thread per
// (bag, feature) walks the bag's indices, summing in float32 (float64 for
// float64) with each per-sample weight applied to its row, dividing by the
// count for a mean, or keeping the first row that reaches the maximum. The
// feature-0 thread of each bag also writes its offset2bag entries and its
// count. Indices equal to padding_idx are left out of every result.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/embedding_bag_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {


__device__ __forceinline__ int64_t index_at(const IndexVector& v, int64_t i) {
  const int64_t off = i * v.stride;
  return v.is32 ? static_cast<const int32_t*>(v.data)[off] : static_cast<const int64_t*>(v.data)[off];
}

__device__ __forceinline__ void set_aux(void* p, bool is32, int64_t i, int64_t v) {
  if (is32) static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
  else static_cast<int64_t*>(p)[i] = v;
}

__device__ void report(BagCheck* out, int64_t code, int64_t position, int64_t value) {
  if (atomicCAS(reinterpret_cast<unsigned long long*>(&out->code), 0ULL,
                static_cast<unsigned long long>(code)) == 0ULL) {
    out->position = position;
    out->value = value;
  }
}

__global__ void check_kernel(IndexVector indices, IndexVector offsets, int64_t rows,
                             BagCheck* out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t b = start; b < offsets.size; b += step) {
    const int64_t o = index_at(offsets, b);
    if (b == 0 && o != 0) report(out, 1, 0, o);
    if (b > 0 && o < index_at(offsets, b - 1)) report(out, 2, b, o);
    if (b == offsets.size - 1 && o > indices.size) report(out, 3, b, o);
  }
  for (int64_t i = start; i < indices.size; i += step) {
    const int64_t idx = index_at(indices, i);
    if (idx < 0 || idx >= rows) report(out, 4, i, idx);
  }
}

template <typename T> __device__ __forceinline__ float widen(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float widen(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float widen(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T, typename A> __device__ __forceinline__ T narrow(A v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half narrow(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 narrow(float v) { return __float2bfloat16_rn(v); }

template <typename T> struct AccOf { using type = float; };
template <> struct AccOf<double> { using type = double; };

template <typename T>
__global__ void embedding_bag_kernel(EmbeddingBagLaunch L) {
  using Acc = typename AccOf<T>::type;
  const T* weight = static_cast<const T*>(L.weight);
  const T* psw = static_cast<const T*>(L.per_sample_weights);
  const int64_t n = L.indices.size, total = L.bags * L.D;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < total;
       t += step) {
    const int64_t bag = t / L.D, d = t % L.D;
    const int64_t begin = index_at(L.offsets, bag);
    const int64_t end = bag + 1 < L.bags ? index_at(L.offsets, bag + 1) : n;
    Acc acc = 0;
    int64_t count = 0, max_row = -1;
    for (int64_t i = begin; i < end; ++i) {
      if (d == 0) set_aux(L.offset2bag, L.aux32, i, bag);
      const int64_t row = index_at(L.indices, i);
      if (L.padding_idx >= 0 && row == L.padding_idx) continue;
      const Acc v = static_cast<Acc>(widen(weight[row * L.ws0 + d * L.ws1]));
      if (L.mode == 2) {
        if (count == 0 || v > acc) {
          acc = v;
          max_row = row;
        }
      } else {
        acc += psw != nullptr ? static_cast<Acc>(widen(psw[i * L.psw_stride])) * v : v;
      }
      ++count;
    }
    if (L.mode == 1 && count > 0) acc /= static_cast<Acc>(count);
    static_cast<T*>(L.output)[bag * L.D + d] = narrow<T>(acc);
    if (d == 0) set_aux(L.bag_size, L.aux32, bag, count);
    if (L.mode == 2) set_aux(L.max_indices, L.aux32, bag * L.D + d, max_row);
  }
}

}  // namespace

void launch_embedding_bag_check(const IndexVector& indices, const IndexVector& offsets,
                                int64_t rows, BagCheck* out, cudaStream_t stream) {
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(BagCheck), stream));
  const int64_t n = indices.size > offsets.size ? indices.size : offsets.size;
  if (n > 0) check_kernel<<<blocks_for(n), kThreads, 0, stream>>>(indices, offsets, rows, out);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_embedding_bag(const EmbeddingBagLaunch& L, cudaStream_t stream) {
  if (L.bags * L.D == 0) return;
  discard_earlier_error();
  const int blocks = blocks_for(L.bags * L.D);
  switch (L.dtype) {
    case DType::Float32: embedding_bag_kernel<float><<<blocks, kThreads, 0, stream>>>(L); break;
    case DType::Float64: embedding_bag_kernel<double><<<blocks, kThreads, 0, stream>>>(L); break;
    case DType::Float16: embedding_bag_kernel<__half><<<blocks, kThreads, 0, stream>>>(L); break;
    case DType::BFloat16:
      embedding_bag_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(L);
      break;
    default: fail(str("cuda _embedding_bag: unsupported weight dtype ", dtype_name(L.dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
