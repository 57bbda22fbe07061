// _adaptive_avg_pool2d/3d and adaptive_max_pool2d/3d (ops/adaptive_pool.cpp);
// devices register the kernel.
#pragma once

#include <array>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// For every plane (the leading dims of self: (N, C) or (C)) and output cell
// (od, oh, ow), the window of input cells [floor(o * in / out),
// ceil((o + 1) * in / out)) in each spatial dim: out = its mean (average) or
// its maximum with indices = the maximum's position in the plane
// (d * H * W + h * W + w; the first of equal maxima, a NaN wins, the last
// NaN). All three are 5-D (N, C, D, H, W) views here (ops/pool_geometry.h:
// 2-D pools have D = 1, unbatched ones N = 1); out / indices are fresh (in
// the layout the op chose), self any strides.
struct AdaptivePoolArgs {
  Tensor self, out, indices;  // indices: int64, max only
  bool max = false;
  // average: divide the sum once by the window's size, as torch's
  // channels-last kernel does in its vector lanes (its other kernels, and
  // that one past the last full vector of channels, divide by each dim's
  // extent in turn; the two can differ in the last bit)
  bool divide_once = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const AdaptivePoolArgs&)> adaptive_pool_kernel;
}  // namespace ops

}  // namespace aotishim
