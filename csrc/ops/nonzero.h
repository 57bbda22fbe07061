// nonzero (ops/nonzero.cpp): the indices of self's nonzero elements. The
// result's size depends on the data, so the device's kernel allocates it.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out = int64 (n, ndim): the index of every element of self that is not zero
// (NaN counts as nonzero, -0.0 as zero), in row-major order, laid out as
// torch lays it out: strides (1, n), the transpose of a contiguous (ndim, n).
struct NonzeroArgs {
  Tensor self;
  Tensor out;  // set by the kernel, on self's device
};

namespace ops {
AOTISHIM_API extern Op<void(NonzeroArgs&)> nonzero_kernel;
}  // namespace ops

}  // namespace aotishim
