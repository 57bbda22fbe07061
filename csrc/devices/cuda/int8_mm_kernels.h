// Matrix products with int8 operands on cuda (int8_mm_kernels.cu): _int_mm
// (int8 x int8 summed exactly in int32) and _weight_int8pack_mm (float
// activations times int8 weights, summed in float32, scaled per output
// channel). Tiled kernels of our own over operands of any strides.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

// A 2-D operand: element (i, j) at data[i * s0 + j * s1] (element strides).
struct Matrix2d {
  void* data = nullptr;
  int64_t s0 = 0, s1 = 0;
};

// out (M, N) int32 = a (M, K) int8 @ b (K, N) int8; sums wrap in 32 bits.
void launch_int_mm(const Matrix2d& out, const Matrix2d& a, const Matrix2d& b, int64_t M,
                   int64_t N, int64_t K, cudaStream_t stream);

// out (M, N) = (a (M, K) @ w (N, K)^T) * scales[n], a, scales and out of
// `dtype` (float32, bfloat16, float16); float32 accumulation, one rounding.
void launch_weight_int8pack_mm(DType dtype, const Matrix2d& out, const Matrix2d& a,
                               const Matrix2d& w, const void* scales, int64_t scales_stride,
                               int64_t M, int64_t N, int64_t K, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
