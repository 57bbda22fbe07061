// max_unpool2d / max_unpool3d (ops/max_unpool.cpp); devices register the
// kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// Over (N, C, D, H, W) views (ops/pool_geometry.h): out = zeros, then for
// every element of self, in order, out's plane at position indices (d * H * W
// + h * W + w of out's spatial sizes) = that element (a repeated index: the
// last one wins). An index outside the plane fails the op with torch's
// message. out is fresh (any strides), self and indices any strides.
struct UnpoolArgs {
  Tensor self, indices, out;
  int64_t spatial = 2;  // for the message
};

namespace ops {
AOTISHIM_API extern Op<void(const UnpoolArgs&)> max_unpool_kernel;
}  // namespace ops

}  // namespace aotishim
