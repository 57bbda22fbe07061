// _trilinear on cuda, one thread per output element, in torch's two stages:
// buf = sum over the first summed dims of i1 * i2, rounded to the dtype (the
// batched product torch stores), then the sum over the others of buf * i3,
// rounded again, added into the result (rounded, as torch's add_ into a
// zero-filled output). Sums accumulate in float for float16 and bfloat16
// (cuBLAS's compute type there) and in the dtype otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/trilinear_kernels.h"
#include "devices/cuda/typed_values.cuh"

namespace aotishim {
namespace cuda {

namespace {

// Sets idx at `dims` to the row-major unravelling of c over `sizes`.
__device__ __forceinline__ void place(int64_t c, int count, const int* dims, const int64_t* sizes,
                                      int64_t* idx) {
  for (int j = count - 1; j >= 0; --j) {
    idx[dims[j]] = c % sizes[j];
    c /= sizes[j];
  }
}

__device__ __forceinline__ int64_t dot(const int64_t* idx, const int64_t* strides, int n) {
  int64_t off = 0;
  for (int d = 0; d < n; ++d) off += idx[d] * strides[d];
  return off;
}

template <typename T>
__global__ void trilinear_kernel(TrilinearLaunch g, const T* i1, const T* i2, const T* i3, T* out,
                                 int64_t numel, int64_t total12, int64_t total23) {
  using V = opmath_of<T>;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < numel;
       e += step) {
    int64_t idx[kMaxCopyDims];
    int64_t rest = e, out_off = 0;
    for (int d = g.ndim - 1; d >= 0; --d) {
      idx[d] = rest % g.out_sizes[d];
      rest /= g.out_sizes[d];
      out_off += idx[d] * g.out_strides[d];
    }
    // the unrolled dim: this element's slice, or every slice when it is summed
    const int64_t k_begin = g.unroll_summed ? 0 : idx[g.unroll_dim];
    const int64_t k_end = g.unroll_summed ? g.unroll_size : k_begin + 1;
    V acc = 0;
    for (int64_t k = k_begin; k < k_end; ++k) {
      idx[g.unroll_dim] = k;
      V second = 0;
      for (int64_t c23 = 0; c23 < total23; ++c23) {
        place(c23, g.count23, g.dims23, g.sizes23, idx);
        V first = 0;
        for (int64_t c12 = 0; c12 < total12; ++c12) {
          place(c12, g.count12, g.dims12, g.sizes12, idx);
          first += load_value<T>(i1[dot(idx, g.strides1, g.ndim)]) *
                   load_value<T>(i2[dot(idx, g.strides2, g.ndim)]);
        }
        second += rounded_as<T>(first) * load_value<T>(i3[dot(idx, g.strides3, g.ndim)]);
      }
      acc = rounded_as<T>(acc + rounded_as<T>(second));
    }
    out[out_off] = store_value<T>(acc);
  }
}

int64_t product(const int64_t* sizes, int count) {
  int64_t p = 1;
  for (int j = 0; j < count; ++j) p *= sizes[j];
  return p;
}

}  // namespace

void launch_trilinear(const TrilinearLaunch& g, int64_t out_numel, cudaStream_t stream) {
  AOTISHIM_CHECK(g.ndim >= 1 && g.ndim <= kMaxCopyDims && g.unroll_dim >= 0 &&
                     g.unroll_dim < g.ndim,
                 "cuda _trilinear: bad geometry");
  if (out_numel == 0) return;
  const int64_t total12 = product(g.sizes12, g.count12);
  const int64_t total23 = product(g.sizes23, g.count23);
  discard_earlier_error();
  dispatch_floating(g.dtype, "cuda _trilinear", [&](auto tag) {
    using T = decltype(tag);
    trilinear_kernel<T><<<blocks_for(out_numel), kThreads, 0, stream>>>(
        g, static_cast<const T*>(g.i1), static_cast<const T*>(g.i2), static_cast<const T*>(g.i3),
        static_cast<T*>(g.out), out_numel, total12, total23);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
