// kthvalue / median / nanmedian / mode on cuda (order_statistics_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

enum class OrderPick {
  Kth,        // the k-th smallest (1-based)
  Median,     // the lower median, or NaN when the line has one
  NanMedian,  // the lower median of the numbers (torch's rule, see the .cu)
  Mode,       // the most frequent value (torch cuda's choice among ties)
};

// A tensor walked in row-major order over `sizes` (ndim <= kMaxCopyDims) by
// its own element strides.
struct ElementWalk {
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

struct SelectLaunch {
  DType dtype = DType::Float32;
  const void* self = nullptr;
  ElementWalk self_walk;         // element j of the walk is element j % n of line j / n
  int64_t rows = 0, n = 0;
  OrderPick pick = OrderPick::Kth;
  int64_t k = 1;          // Kth only
  // How NaN sorts: false, every NaN above every number (torch cuda's radix
  // selection for kthvalue, and its comparison sorts); true, a NaN with its
  // sign bit set below every number, as torch cuda's radix sorts order them.
  // -0.0 sorts below 0.0 with false, equal to it with true.
  bool nan_by_sign = false;
  void* values = nullptr;  // self's dtype, one per line, walked over values_walk
  ElementWalk values_walk;
  int64_t* indices = nullptr;  // null: no indices (the whole-tensor medians)
  ElementWalk indices_walk;
};

using SelectScratch = std::function<void*(size_t bytes)>;

// values[r] (and indices[r], the position in its line) = the picked element
// of line r, its bits as they lie in self.
void launch_select(const SelectLaunch& L, const SelectScratch& scratch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
