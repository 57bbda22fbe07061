// pad's kernel on cuda (pad_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

enum class DevicePad : int32_t { Constant, Reflect, Replicate, Circular };

// One padded tensor: per dim the input's and output's sizes and strides and
// the padding before and after (negative: cropped).
struct PadLaunch {
  int ndim = 0;
  DevicePad mode = DevicePad::Constant;
  int64_t in_sizes[kMaxCopyDims] = {};
  int64_t in_strides[kMaxCopyDims] = {};
  int64_t out_sizes[kMaxCopyDims] = {};
  int64_t out_strides[kMaxCopyDims] = {};
  int64_t before[kMaxCopyDims] = {};
  int64_t after[kMaxCopyDims] = {};
};

// out[o] = self[source of o] or *value (constant mode, outside self), moving
// elements of `item_size` bytes (1, 2, 4, 8 or 16); value points at one
// element on the device (unused but in constant mode).
void launch_pad(const PadLaunch& geometry, size_t item_size, const void* self, void* out,
                const void* value, int64_t numel, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
