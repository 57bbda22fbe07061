// kthvalue, median, nanmedian and mode (ops/order_statistics.cpp): one
// value of every line of self along a dim (or of all of self), with its
// index; devices register the kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class SelectKind {
  Kth,        // the k-th smallest (1-based), NaN above every number
  Median,     // the lower median; NaN when the line holds one
  NanMedian,  // the lower median of the numbers; NaN when there are none
  Mode,       // the most frequent value (the smallest among equally frequent
              // ones) and the last index where it occurs
};

// values / indices: self's sizes with `dim` of size 1, contiguous (what
// torch allocates before dropping the dim for keepdim=False). With dim < 0
// the line is all of self (median(self), nanmedian(self)): values is 0-d and
// there are no indices. Lines are never empty.
struct SelectArgs {
  Tensor self, values, indices;
  int64_t dim = 0;  // wrapped; 0 for a 0-d self; -1: all of self
  SelectKind kind = SelectKind::Kth;
  int64_t k = 1;  // Kth only
};

namespace ops {
AOTISHIM_API extern Op<void(const SelectArgs&)> select_kernel;
}  // namespace ops

}  // namespace aotishim
