// Tiled int8 matrix products: each block computes a 16x16 tile of the
// output, staging 16-wide slices of both operands in shared memory (read
// through their strides, so transposes and views need no packing). Integer
// sums add in unsigned 32-bit arithmetic: the exact sum modulo 2^32, as
// int32 accumulation wraps, with no undefined overflow.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/int8_mm_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

constexpr int kTile = 16;
constexpr int64_t kMaxGrid = 65535;

template <typename T> __device__ __forceinline__ float to_float(T v) { return static_cast<float>(v); }
template <> __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <> __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v) { return static_cast<T>(v); }
template <> __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }

__global__ void int_mm_kernel(Matrix2d out, Matrix2d a, Matrix2d b, int64_t M, int64_t N,
                              int64_t K) {
  __shared__ int32_t as[kTile][kTile + 1];
  __shared__ int32_t bs[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int8_t* A = static_cast<const int8_t*>(a.data);
  const int8_t* B = static_cast<const int8_t*>(b.data);
  for (int64_t tm = blockIdx.y; tm * kTile < M; tm += gridDim.y) {
    for (int64_t tn = blockIdx.x; tn * kTile < N; tn += gridDim.x) {
      const int64_t m = tm * kTile + ty, n = tn * kTile + tx;
      uint32_t acc = 0;
      for (int64_t k0 = 0; k0 < K; k0 += kTile) {
        as[ty][tx] = (m < M && k0 + tx < K) ? A[m * a.s0 + (k0 + tx) * a.s1] : 0;
        bs[ty][tx] = (k0 + ty < K && n < N) ? B[(k0 + ty) * b.s0 + n * b.s1] : 0;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kTile; ++t)
          acc += static_cast<uint32_t>(as[ty][t] * bs[t][tx]);  // |product| <= 2^14
        __syncthreads();
      }
      if (m < M && n < N) static_cast<int32_t*>(out.data)[m * out.s0 + n * out.s1] =
          static_cast<int32_t>(acc);
    }
  }
}

template <typename T>
__global__ void weight_int8pack_kernel(Matrix2d out, Matrix2d a, Matrix2d w, const T* scales,
                                       int64_t scales_stride, int64_t M, int64_t N, int64_t K) {
  __shared__ float as[kTile][kTile + 1];
  __shared__ float ws[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const T* A = static_cast<const T*>(a.data);
  const int8_t* W = static_cast<const int8_t*>(w.data);
  for (int64_t tm = blockIdx.y; tm * kTile < M; tm += gridDim.y) {
    for (int64_t tn = blockIdx.x; tn * kTile < N; tn += gridDim.x) {
      const int64_t m = tm * kTile + ty, n = tn * kTile + tx;
      // The weight tile is read with n along threadIdx.y, so neighbouring
      // threads read neighbouring k of one packed weight row.
      const int64_t wn = tn * kTile + ty;
      float acc = 0.0f;
      for (int64_t k0 = 0; k0 < K; k0 += kTile) {
        as[ty][tx] = (m < M && k0 + tx < K) ? to_float(A[m * a.s0 + (k0 + tx) * a.s1]) : 0.0f;
        ws[ty][tx] = (wn < N && k0 + tx < K) ? static_cast<float>(W[wn * w.s0 + (k0 + tx) * w.s1])
                                             : 0.0f;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < kTile; ++t) acc = fmaf(as[ty][t], ws[tx][t], acc);
        __syncthreads();
      }
      if (m < M && n < N) {
        const float scaled = acc * to_float(scales[n * scales_stride]);
        static_cast<T*>(out.data)[m * out.s0 + n * out.s1] = from_float<T>(scaled);
      }
    }
  }
}

dim3 grid_for(int64_t M, int64_t N) {
  const int64_t gx = (N + kTile - 1) / kTile, gy = (M + kTile - 1) / kTile;
  return dim3(static_cast<unsigned>(gx < 1 ? 1 : (gx > kMaxGrid ? kMaxGrid : gx)),
              static_cast<unsigned>(gy < 1 ? 1 : (gy > kMaxGrid ? kMaxGrid : gy)));
}

}  // namespace

void launch_int_mm(const Matrix2d& out, const Matrix2d& a, const Matrix2d& b, int64_t M,
                   int64_t N, int64_t K, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  discard_earlier_error();
  int_mm_kernel<<<grid_for(M, N), dim3(kTile, kTile), 0, stream>>>(out, a, b, M, N, K);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_weight_int8pack_mm(DType dtype, const Matrix2d& out, const Matrix2d& a,
                               const Matrix2d& w, const void* scales, int64_t scales_stride,
                               int64_t M, int64_t N, int64_t K, cudaStream_t stream) {
  if (M == 0 || N == 0) return;
  discard_earlier_error();
  const dim3 grid = grid_for(M, N), block(kTile, kTile);
  switch (dtype) {
    case DType::Float32:
      weight_int8pack_kernel<float><<<grid, block, 0, stream>>>(
          out, a, w, static_cast<const float*>(scales), scales_stride, M, N, K);
      break;
    case DType::Float16:
      weight_int8pack_kernel<__half><<<grid, block, 0, stream>>>(
          out, a, w, static_cast<const __half*>(scales), scales_stride, M, N, K);
      break;
    case DType::BFloat16:
      weight_int8pack_kernel<__nv_bfloat16><<<grid, block, 0, stream>>>(
          out, a, w, static_cast<const __nv_bfloat16*>(scales), scales_stride, M, N, K);
      break;
    default:
      fail(str("cuda _weight_int8pack_mm: self must be float32, bfloat16 or float16, got ",
               dtype_name(dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
