// masked_select (ops/masked_select.cpp): the elements of self where mask is
// true, as a 1-D tensor. Its length depends on the data, so the device's
// kernel allocates it.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// self and mask arrive broadcast to one shape (stride-0 views where a size was
// 1); out = self's dtype, contiguous (n,), the selected elements in row-major
// order of that shape.
struct MaskedSelectArgs {
  Tensor self;
  Tensor mask;  // bool
  Tensor out;   // set by the kernel, on self's device
};

namespace ops {
AOTISHIM_API extern Op<void(MaskedSelectArgs&)> masked_select_kernel;
}  // namespace ops

}  // namespace aotishim
