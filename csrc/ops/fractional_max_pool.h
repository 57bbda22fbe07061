// fractional_max_pool2d / fractional_max_pool3d (ops/fractional_max_pool.cpp);
// devices register the kernel.
#pragma once

#include <array>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// Fractional max pooling over (N, C, D, H, W) views (ops/pool_geometry.h; a
// 2-D pool has D = 1, pool size 1 there). samples: (N, C, spatial) of
// self's dtype, one number u in [0, 1) per plane and spatial dim (3-D: D, H,
// W; 2-D: W, H, torch's order). Window starts in a dim of input size `in`,
// output size `out`, pool size `k`: alpha = (in - k) / (out - 1) and
// start(i) = int((i + u) * alpha) - int(u * alpha), the last one in - k,
// every step rounded to self's dtype as torch's kernel computes it. out =
// the window's max (NaN wins), indices its position in the plane.
struct FractionalPoolArgs {
  Tensor self, samples, out, indices;
  std::array<int64_t, 3> pool{};
  int64_t spatial = 2;
};

namespace ops {
AOTISHIM_API extern Op<void(const FractionalPoolArgs&)> fractional_max_pool_kernel;
}  // namespace ops

}  // namespace aotishim
