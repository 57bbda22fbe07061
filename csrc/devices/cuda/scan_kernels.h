// cumsum, cumprod and logcumsumexp on cuda (scan_kernels.cu): CUB's scan by
// key over the lines of a tensor, and scans that round every step to the
// result's dtype in torch cuda's order.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"
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

// t seen with dimension `dim` moved last (its sizes and strides reordered,
// no copy); throws beyond kMaxCopyDims dimensions.
inline LineView line_view(const Tensor& t, int64_t dim) {
  AOTISHIM_CHECK(t.dim() <= kMaxCopyDims, "cuda: up to ", kMaxCopyDims,
                 " dimensions, got ", t.dim());
  LineView v;
  v.data = t.data();
  v.dtype = t.dtype;
  v.ndim = static_cast<int>(t.dim());
  int k = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    v.sizes[k] = t.sizes[d];
    v.strides[k++] = t.strides[d];
  }
  v.sizes[k] = t.sizes[dim];
  v.strides[k] = t.strides[dim];
  return v;
}

using ScanScratch = std::function<void*(size_t bytes)>;

// out = the running sum (or product) of self along the last dimension of
// the views: each element converted to out's dtype, accumulated in float32
// (float32 results), float64 (float64) or 64-bit integers wrapping (integer
// results), as torch's cuda kernels accumulate. (float16/bfloat16 results
// would accumulate in float32, which torch cuda does not: they go to
// launch_rounded_scan.)
void launch_cumulative(const LineView& out, const LineView& self, bool product,
                       const ScanScratch& scratch, cudaStream_t stream);

enum class RoundedScan { Sum, Product, LogSumExp };

// out = the running sum, product or log-sum-exp of self (converted to out's
// dtype first) along the last dimension of the views, as torch cuda's scans
// compute the results it accumulates in their own dtype (float16/bfloat16
// sums and products, log-sum-exp of every floating dtype): every combination
// rounded to out's dtype, the elements combined in the order torch's kernel
// combines them for this shape: a tensor that is a single line as CUB's
// device scan, lines along the innermost dimension (`innermost`: the scanned
// dim is self's last) by torch's blocked Sklansky scan, other lines one
// after the other.
void launch_rounded_scan(const LineView& out, const LineView& self, RoundedScan kind,
                         bool innermost, const ScanScratch& scratch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
