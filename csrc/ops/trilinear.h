// _trilinear (ops/trilinear.cpp), the op behind nn.Bilinear; devices
// register the kernel.
#pragma once

#include <vector>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// i1, i2, i3: views of one rank T (expanded dims: size 1, stride 0; size-1
// dims broadcast). For every index k of unroll_dim, as torch computes it:
//   buf  = sum over sum12 of i1 * i2        (rounded to the dtype)
//   buf2 = sum over sum23 of buf * i3       (rounded to the dtype)
// then out[k] = buf2, or out += buf2 when unroll_dim is summed. sum12: the
// summed dims where i3 is expanded, sum23: the other summed dims (both
// without unroll_dim). out: rank T, summed dims of size 1 (a view of the
// fresh contiguous result), zero-filled by the kernel.
struct TrilinearArgs {
  Tensor i1, i2, i3, out;
  std::vector<bool> sum12, sum23;
  int64_t unroll_dim = 0;
  bool unroll_summed = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const TrilinearArgs&)> trilinear_kernel;
}  // namespace ops

}  // namespace aotishim
