// histc's kernels on cuda (histc_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// Blocks the range reduction uses: its partial results are 3 doubles each.
constexpr int kRangeBlocks = 256;

// partial[3 * b + {0, 1, 2}] = block b's smallest and largest element and
// whether it met a NaN (1.0), over self (any strides, `ndim` <= kMaxCopyDims).
void launch_histc_range(const StridedView& self, const int64_t* sizes, int ndim, int64_t numel,
                        double* partial, cudaStream_t stream);

// counts[bin] += 1 for each element of self in [lo, hi] (bins as torch's cuda
// kernel computes them), then out (bins,) = counts in out's dtype.
void launch_histc(const StridedView& self, const int64_t* sizes, int ndim, int64_t numel,
                  int64_t bins, double lo, double hi, unsigned long long* counts,
                  const StridedView& out, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
