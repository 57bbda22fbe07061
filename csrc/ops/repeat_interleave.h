// repeat_interleave(repeats) (ops/repeat_interleave.cpp): the index i
// repeated repeats[i] times, for a 1-D int32/int64 `repeats`. The length
// depends on the data, so the device's kernel allocates the result.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out (1-D, repeats' dtype, contiguous) = 0 repeated repeats[0] times, then
// 1 repeated repeats[1] times, ...; a negative repeat, or a total other than
// output_size when one is given, is an error.
struct RepeatInterleaveArgs {
  Tensor repeats;
  int64_t output_size = -1;  // -1: not given
  Tensor out;                // set by the kernel
};

namespace ops {
AOTISHIM_API extern Op<void(RepeatInterleaveArgs&)> repeat_interleave_kernel;
}  // namespace ops

}  // namespace aotishim
