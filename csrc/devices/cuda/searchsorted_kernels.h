// searchsorted on cuda (searchsorted_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// One search per element of self. self and out are walked over `sizes`
// (ndim >= 1) by their own strides; the sequence line (and sorter line) of
// an element starts at the sum over the leading dims (all but the last) of
// its index times seq_strides (sorter_strides): zero strides for a 1-D
// sequence, which serves every element.
struct SearchLaunch {
  DType dtype = DType::Float32;  // the sequence's and self's
  const void* sequence = nullptr;
  const void* self = nullptr;
  void* out = nullptr;
  bool out_int32 = false;
  const int64_t* sorter = nullptr;  // null: the sequence is sorted as it lies
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t self_strides[kMaxCopyDims] = {};
  int64_t out_strides[kMaxCopyDims] = {};
  int64_t seq_strides[kMaxCopyDims] = {};
  int64_t sorter_strides[kMaxCopyDims] = {};
  int64_t n = 0;            // the length of a sequence line
  int64_t seq_step = 0;     // the sequence's stride along a line
  int64_t sorter_step = 0;  // the sorter's stride along a line
  bool right = false;
};

// out = the insertion point of each element of self in its line: torch
// cuda's bisection (the first position whose element is not below the value,
// "below" being !(x >= v), or !(x > v) with `right`), so NaN lands where
// torch puts it.
void launch_searchsorted(const SearchLaunch& L, cudaStream_t stream);

// *bad (device memory) = 1 if any sorter entry lies outside [0, n), else 0;
// the sorter is walked over `sizes` (ndim >= 1 dims) by `strides`.
void launch_sorter_check(const int64_t* sorter, const int64_t* sizes, const int64_t* strides,
                         int ndim, int64_t n, int* bad, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
