// avg_pool2d, avg_pool3d, max_pool2d_with_indices, max_pool3d_with_indices
// (ops/pooling.cpp); devices register the kernel.
#pragma once

#include <array>
#include <cstdint>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// A windowed pool over (N, C, D, H, W) views (ops/pool_geometry.h; 2-D pools
// have D = 1 and kernel, stride and dilation 1, padding 0 there). Output cell
// o of a spatial dim reads input cells o * stride - padding + k * dilation,
// k < kernel, those inside the input.
//   max: out = the largest (a NaN wins, the last NaN of the window), indices
//     = its position in the plane (d * H * W + h * W + w; the first of equal
//     maxima), in window order d, h, w.
//   average: out = the window's sum over a divisor: divisor_override when
//     nonzero, else the window's size clipped to the padded input
//     (count_include_pad) or to the input itself; an empty window gives 0.
// out / indices are fresh (any strides the op chose), self any strides.
struct PoolArgs {
  Tensor self, out, indices;  // indices: int64, max only
  std::array<int64_t, 3> kernel{}, stride{}, padding{}, dilation{};
  bool max = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

namespace ops {
AOTISHIM_API extern Op<void(const PoolArgs&)> pool_kernel;
}  // namespace ops

}  // namespace aotishim
