// grid_sampler_3d's kernel on cuda (sampling_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

// input (N, C, D, H, W), grid (N, D', H', W', 3) and out (N, C, D', H', W'),
// each with its own strides (elements), all of `dtype`.
struct GridSampleLaunch {
  DType dtype = DType::Float32;
  const void* input = nullptr;
  const void* grid = nullptr;
  void* out = nullptr;
  int64_t input_sizes[5] = {};
  int64_t input_strides[5] = {};
  int64_t grid_strides[5] = {};
  int64_t out_sizes[5] = {};
  int64_t out_strides[5] = {};
  int interpolation = 0;  // 0 bilinear, 1 nearest
  int padding = 0;        // 0 zeros, 1 border, 2 reflection
  bool align_corners = false;
};

void launch_grid_sampler_3d(const GridSampleLaunch& args, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
