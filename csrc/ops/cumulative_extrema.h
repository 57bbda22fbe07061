// cummax / cummin (ops/cumulative_extrema.cpp): the running maximum or
// minimum along a dim with the index where it was reached; devices register
// the kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// values[..., i, ...] = max (min) of self[..., 0..i, ...] along dim, and
// indices the position of that element: the latest among equal ones, and
// once a NaN is seen, NaN at the latest NaN (torch's CPU semantics). values
// (self's dtype) and indices (int64) are fresh and contiguous; 0-d tensors
// arrive as shape [1].
struct CumulativeExtremumArgs {
  Tensor self, values, indices;
  int64_t dim = 0;
  bool maximum = true;
};

namespace ops {
AOTISHIM_API extern Op<void(const CumulativeExtremumArgs&)> cumulative_extremum;
}  // namespace ops

}  // namespace aotishim
