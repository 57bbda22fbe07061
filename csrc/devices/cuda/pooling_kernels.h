// The pooling ops' kernels on cuda (pooling_kernels.cu): windowed average /
// max pools, adaptive pools and fractional max pools. One thread per output
// cell reads its window through the input's strides and writes through the
// output's, so every layout is served as it lies.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace aotishim {
namespace cuda {

// A 5-D (N, C, D, H, W) strided view of device memory, as the pooling ops
// hand their tensors to kernels (ops/pool_geometry.h).
struct Volume {
  void* data = nullptr;
  int64_t sizes[5] = {};
  int64_t strides[5] = {};
};

inline Volume volume_of(const Tensor& t) {
  AOTISHIM_CHECK(t.dim() == 5, "cuda pooling: expected a 5-D view, got ", t.dim(), " dims");
  Volume v;
  v.data = t.data();
  for (int d = 0; d < 5; ++d) {
    v.sizes[d] = t.sizes[d];
    v.strides[d] = t.strides[d];
  }
  return v;
}

// avg_pool2d/3d, max_pool2d/3d_with_indices (ops/pooling.h has the rules).
struct WindowPoolLaunch {
  DType dtype = DType::Float32;  // self and out
  Volume self, out, indices;     // indices: int64, max only
  int64_t kernel[3] = {}, stride[3] = {}, padding[3] = {}, dilation[3] = {};
  bool max = false;
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
  // max: each window's index starts at 0 instead of at its first cell, as in
  // torch's channels-last max_pool2d kernel (seen only when no value of the
  // window is above -inf)
  bool first_index_zero = false;
};

void launch_window_pool(const WindowPoolLaunch& launch, cudaStream_t stream);

// How an adaptive average divides its window's sum, each as one of torch's
// cuda kernels does: by each dim's extent in turn (the 2-D contiguous
// kernel), by the window's size once (the 3-D kernel), or times the
// reciprocal of the window's size rounded to the dtype (the 2-D
// channels-last kernel).
enum class AdaptiveAverage : int32_t { DivideInTurn, DivideOnce, ReciprocalInDtype };

// _adaptive_avg_pool2d/3d, adaptive_max_pool2d/3d (ops/adaptive_pool.h).
struct AdaptivePoolLaunch {
  DType dtype = DType::Float32;
  Volume self, out, indices;  // indices: int64, max only
  bool max = false;
  AdaptiveAverage average = AdaptiveAverage::DivideInTurn;
};

void launch_adaptive_pool(const AdaptivePoolLaunch& launch, cudaStream_t stream);

// fractional_max_pool2d/3d (ops/fractional_max_pool.h). samples[n, c, k] of
// self's dtype; sample_column[i] is the k that drives spatial dim i (D, H,
// W), -1 for none (a 2-D pool's D, whose windows all start at 0).
struct FractionalPoolLaunch {
  DType dtype = DType::Float32;
  Volume self, out, indices;
  const void* samples = nullptr;
  int64_t sample_strides[3] = {};
  int64_t pool[3] = {};
  int sample_column[3] = {-1, -1, -1};
};

void launch_fractional_max_pool(const FractionalPoolLaunch& launch, cudaStream_t stream);

// max_unpool2d/3d (ops/max_unpool.h): out = zeros, then out's plane at
// indices[e] = self[e] for every element e of self; where several elements
// name one position, the last of them in self's order (d, h, w) wins. An
// element whose index lies outside out's plane is left out, and *first_bad
// becomes the smallest plane * (self's plane size) + position among such
// elements (~0 when there is none). winners: out.numel() slots of scratch.
// Values move as item_size-byte words (1, 2, 4 or 8), never converted.
struct UnpoolLaunch {
  size_t item_size = 4;
  Volume self, indices, out;  // indices: int64
  unsigned long long* winners = nullptr;
  unsigned long long* first_bad = nullptr;  // one slot, device memory
};

void launch_max_unpool(const UnpoolLaunch& launch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
