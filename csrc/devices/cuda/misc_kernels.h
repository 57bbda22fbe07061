// Small kernels on cuda (misc_kernels.cu): hann_window, _fused_rms_norm and
// _addmm_activation's epilogue.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// out[i * stride] for i < count: the periodic Hann window of length
// count + 1 less its last element, 0.5 - 0.5 cos(i * 2 pi / (n - 1)), in
// torch cuda's steps (ops/window.h); out is float32/64, float16 or bfloat16.
void launch_hann_window(void* out, DType dtype, int64_t count, int64_t stride, int64_t n,
                        cudaStream_t stream);

// One _fused_rms_norm: input (any strides, `input_dims` of them) as `rows` rows
// of `n` elements; weight (null, or n elements over `weight_dims`, any real
// floating dtype); out contiguous in input's dtype; rstd contiguous, one per
// row, float32 (float64 for float64 input).
struct RmsNormLaunch {
  DType dtype = DType::Float32;
  const void* input = nullptr;
  int input_dims = 0;
  int64_t input_sizes[kMaxCopyDims] = {};
  int64_t input_strides[kMaxCopyDims] = {};
  DType weight_dtype = DType::Float32;
  const void* weight = nullptr;
  int weight_dims = 0;
  int64_t weight_sizes[kMaxCopyDims] = {};
  int64_t weight_strides[kMaxCopyDims] = {};
  void* out = nullptr;
  void* rstd = nullptr;
  int64_t rows = 0;
  int64_t n = 0;
  double eps = 0.0;
};

void launch_fused_rms_norm(const RmsNormLaunch& args, cudaStream_t stream);

// data[i] = relu(data[i]) or gelu(data[i]) (torch cuda's tanh form) for the
// `numel` elements of a contiguous float32/64, float16 or bfloat16 array.
void launch_addmm_activation(void* data, DType dtype, int64_t numel, bool gelu,
                             cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
