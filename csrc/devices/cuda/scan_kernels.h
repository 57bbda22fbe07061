// cumsum and cumprod on cuda (scan_kernels.cu): CUB's scan by key over the
// lines of a tensor.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// A tensor seen with the scanned dimension last: `sizes` and the element
// strides of its memory, in that order.
struct LineView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

using ScanScratch = std::function<void*(size_t bytes)>;

// out = the running sum (or product) of self along the last dimension of
// the views: each element converted to out's dtype, accumulated in float32
// (float16, bfloat16, float32 results), float64 (float64) or 64-bit integers
// wrapping (integer results), as torch's cuda kernels accumulate.
void launch_cumulative(const LineView& out, const LineView& self, bool product,
                       const ScanScratch& scratch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
