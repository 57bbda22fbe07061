// histc (ops/histc.cpp): a histogram of self's elements over `bins` equal
// bins between min and max.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out (bins,) contiguous, self's dtype (floating): the count of self's
// elements in each of the bins. When min == max the range is self's
// smallest and largest element (and widened by 1 on both sides if those are
// equal too); a range that is then not finite is an error. An element's bin
// is the integer part of (x - min) * bins / (max - min) (max itself in the
// last bin), as torch computes it; elements outside [min, max] and NaN are not
// counted.
struct HistcArgs {
  Tensor self, out;
  int64_t bins = 100;
  double min = 0.0, max = 0.0;
};

namespace ops {
AOTISHIM_API extern Op<void(const HistcArgs&)> histc_kernel;
}  // namespace ops

}  // namespace aotishim
