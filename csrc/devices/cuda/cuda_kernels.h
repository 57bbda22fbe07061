// Kernels of the cuda backend (cuda_kernels.cu), launched on a given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

constexpr int kMaxCopyDims = 16;

// A strided view of device memory: `data` points at element 0.
struct StridedView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int64_t strides[kMaxCopyDims] = {};
};

// dst = src elementwise over `sizes` (ndim <= kMaxCopyDims), converting among
// float32/float64/float16/bfloat16; other dtypes copy only to themselves.
// Throws for unsupported conversions.
void launch_copy(const StridedView& dst, const StridedView& src, const int64_t* sizes, int ndim,
                 cudaStream_t stream);

// t = beta * t (t = 0 when beta == 0, so NaN does not propagate); floating dtypes.
void launch_scale(const StridedView& t, const int64_t* sizes, int ndim, double beta,
                  cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
