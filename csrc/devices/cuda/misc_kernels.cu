// hann_window, _fused_rms_norm and _addmm_activation's epilogue on cuda, each
// in the steps and types torch cuda computes it in: float16 and bfloat16 in
// float (opmath), intermediates torch keeps in a tensor rounded to the dtype,
// CUDA's own cosf, rsqrtf and tanhf where torch calls them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/misc_kernels.h"
#include "devices/cuda/typed_values.cuh"

namespace aotishim {
namespace cuda {

namespace {

__device__ __forceinline__ float cosine(float x) { return cosf(x); }
__device__ __forceinline__ double cosine(double x) { return ::cos(x); }
// torch's rsqrt: the hardware's approximate rsqrtf for float
__device__ __forceinline__ float inverse_sqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double inverse_sqrt(double x) { return ::rsqrt(x); }
__device__ __forceinline__ float hyperbolic_tangent(float x) { return tanhf(x); }
__device__ __forceinline__ double hyperbolic_tangent(double x) { return ::tanh(x); }

// ---------------------------------------------------------------- hann_window

// torch: arange(n) in the dtype, mul_(2 pi / (n - 1)), cos_(), mul_(-0.5),
// add_(0.5), each result stored in the dtype. torch cuda's mul reads the
// double scalar 2 pi / (n - 1) at the math type (float for the 16-bit
// floats), not rounded to the dtype first as torch's cpu kernels do: for
// float16 and bfloat16 the two windows differ, and each device's follows
// its own torch (tests/gpu/test_cuda_pad_pow_norm_distance.py).
template <typename T>
__global__ void hann_window_kernel(T* out, int64_t count, int64_t stride, double step) {
  using V = opmath_of<T>;
  const V step_v = static_cast<V>(step);
  const int64_t grid_step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += grid_step) {
    const V x = rounded_as<T>(static_cast<V>(i));
    const V angle = rounded_as<T>(x * step_v);
    const V c = rounded_as<T>(cosine(angle));
    const V scaled = rounded_as<T>(c * V(-0.5));
    out[i * stride] = store_value<T>(scaled + V(0.5));
  }
}

// ---------------------------------------------------------------- _fused_rms_norm

// One block per row (grid-stride over rows): the sum of squares in the
// accumulation type (float, or double for float64), reduced over the block by
// a fixed tree (deterministic), rstd = rsqrt(sum / n + eps) as torch cuda's
// kernel forms it, then y = x * rstd * weight rounded once into the dtype.
template <typename T, typename W>
__global__ void rms_norm_kernel(const T* input, StridedShape in, const W* weight, StridedShape w,
                                T* out, opmath_of<T>* rstd, int64_t rows, int64_t n,
                                opmath_of<T> eps) {
  using Acc = opmath_of<T>;
  __shared__ Acc partial[kThreads];
  const int tid = static_cast<int>(threadIdx.x);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    Acc sum = 0;
    for (int64_t i = tid; i < n; i += blockDim.x) {
      const Acc x = load_value<T>(input[offset_in(row * n + i, in)]);
      sum += x * x;
    }
    partial[tid] = sum;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half /= 2) {
      if (tid < half) partial[tid] += partial[tid + half];
      __syncthreads();
    }
    const Acc s = inverse_sqrt(partial[0] / static_cast<Acc>(n) + eps);
    __syncthreads();  // partial[0] is read before the next row overwrites it
    if (tid == 0) rstd[row] = s;
    for (int64_t i = tid; i < n; i += blockDim.x) {
      Acc y = load_value<T>(input[offset_in(row * n + i, in)]) * s;
      if (weight != nullptr) y = y * static_cast<Acc>(load_value<W>(weight[offset_in(i, w)]));
      out[row * n + i] = store_value<T>(y);
    }
  }
}

// ---------------------------------------------------------------- _addmm_activation

// torch cuda's _addmm_activation applies relu (clamp_min(0), NaN kept) or the
// tanh form of gelu, whichever of its paths (cuBLASLt's epilogue or its own
// gelu_(x, "tanh") after the product) runs; never the exact erf form.
template <typename T>
__global__ void activation_kernel(T* data, int64_t numel, bool gelu) {
  using V = opmath_of<T>;
  const V kBeta = static_cast<V>(0.7978845608028654);  // sqrt(2 / pi)
  const V kKappa = static_cast<V>(0.044715);
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const V x = load_value<T>(data[i]);
    V y;
    if (gelu) {
      const V cube = x * x * x;
      const V inner = kBeta * (x + kKappa * cube);
      y = V(0.5) * x * (V(1) + hyperbolic_tangent(inner));
    } else {
      y = isnan(x) ? x : (x > V(0) ? x : V(0));
    }
    data[i] = store_value<T>(y);
  }
}

int row_blocks(int64_t rows) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, 65535)));
}

}  // namespace

void launch_hann_window(void* out, DType dtype, int64_t count, int64_t stride, int64_t n,
                        cudaStream_t stream) {
  if (count == 0) return;
  const double step = 3.14159265358979323846 * 2.0 / static_cast<double>(n - 1);
  discard_earlier_error();
  dispatch_floating(dtype, "cuda hann_window", [&](auto tag) {
    using T = decltype(tag);
    hann_window_kernel<T><<<blocks_for(count), kThreads, 0, stream>>>(static_cast<T*>(out), count,
                                                                      stride, step);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_fused_rms_norm(const RmsNormLaunch& a, cudaStream_t stream) {
  if (a.rows == 0) return;
  const StridedShape in =
      strided_shape(a.input_sizes, a.input_strides, a.input_dims, "cuda _fused_rms_norm");
  const StridedShape w = strided_shape(a.weight_sizes, a.weight_strides, a.weight_dims,
                                       "cuda _fused_rms_norm weight");
  discard_earlier_error();
  dispatch_floating(a.dtype, "cuda _fused_rms_norm", [&](auto input_tag) {
    using T = decltype(input_tag);
    using Acc = opmath_of<T>;
    // no weight: any W, never read
    const DType weight_dtype = a.weight != nullptr ? a.weight_dtype : a.dtype;
    dispatch_floating(weight_dtype, "cuda _fused_rms_norm weight", [&](auto weight_tag) {
      using W = decltype(weight_tag);
      rms_norm_kernel<T, W><<<row_blocks(a.rows), kThreads, 0, stream>>>(
          static_cast<const T*>(a.input), in, static_cast<const W*>(a.weight), w,
          static_cast<T*>(a.out), static_cast<Acc*>(a.rstd), a.rows, a.n,
          static_cast<Acc>(a.eps));
    });
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_addmm_activation(void* data, DType dtype, int64_t numel, bool gelu,
                             cudaStream_t stream) {
  if (numel == 0) return;
  discard_earlier_error();
  dispatch_floating(dtype, "cuda _addmm_activation", [&](auto tag) {
    using T = decltype(tag);
    activation_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(static_cast<T*>(data), numel,
                                                                     gelu);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
