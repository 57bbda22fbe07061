// grid_sampler_3d (ops/grid_sampler.cpp); devices register the kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[n, c, d, h, w] = input[n, c] sampled at grid[n, d, h, w] = (x, y, z)
// in [-1, 1] (x along W, y along H, z along D), as torch's grid_sampler_3d:
// the coordinate unnormalized (align_corners: -1 and 1 are the corner
// cells' centres; else their outer edges), then padded (zeros: cells outside
// read 0; border: clipped; reflection: reflected at the edges, then
// clipped), then interpolated (bilinear: the 8 neighbours weighted by their
// distances; nearest: the nearest cell, halves to even). input 5-D (any
// strides), grid (N, D', H', W', 3) (any strides), out (N, C, D', H', W')
// fresh and contiguous, all of one floating dtype.
struct GridSampleArgs {
  Tensor input, grid, out;
  int64_t interpolation = 0;  // 0 bilinear, 1 nearest
  int64_t padding = 0;        // 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const GridSampleArgs&)> grid_sampler_3d_kernel;
}  // namespace ops

}  // namespace aotishim
