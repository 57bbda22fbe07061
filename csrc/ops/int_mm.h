// _int_mm_out (ops/int_mm.cpp): int8 x int8 matrix products into int32, as
// torch's dynamic int8 quantization emits them.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out (M, N) int32 = self (M, K) int8 @ mat2 (K, N) int8, summed exactly in
// int32; any strides, out's elements each at their own address.
struct IntMmArgs {
  Tensor out, self, mat2;
};

namespace ops {
AOTISHIM_API extern Op<void(const IntMmArgs&)> int_mm_kernel;
}  // namespace ops

}  // namespace aotishim
