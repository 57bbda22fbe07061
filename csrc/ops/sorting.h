// topk and sort (ops/sorting.cpp) validate and allocate their outputs; each
// device registers the kernels. Both order NaN above every number, as torch
// does (NaN is the largest value).
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// values/indices (self's sizes with `dim` of size k, contiguous) = the k
// largest (or smallest) elements of every line of self along dim, in
// decreasing (increasing) order when `sorted`. indices are int64.
struct TopkArgs {
  Tensor self, values, indices;
  int64_t dim = 0;  // wrapped; 0 for a 0-d self
  int64_t k = 0;
  bool largest = true;
  bool sorted = true;
};

// values/indices (self's sizes; self's strides when self is dense, else dense
// in self's dimension order, as torch lays them out) = every line of self along dim in
// ascending (descending) order; `stable` keeps equal elements in their order.
struct SortArgs {
  Tensor self, values, indices;
  int64_t dim = 0;
  bool descending = false;
  bool stable = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const TopkArgs&)> topk_kernel;
AOTISHIM_API extern Op<void(const SortArgs&)> sort_kernel;
}  // namespace ops

}  // namespace aotishim
