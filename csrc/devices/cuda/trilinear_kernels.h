// _trilinear's kernel on cuda (trilinear_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// The three operands as views of one rank (size 1 and stride 0 where
// expanded or broadcast), out over the same rank (summed dims of size 1);
// the summed dims split as ops/trilinear.h describes.
struct TrilinearLaunch {
  DType dtype = DType::Float32;
  const void* i1 = nullptr;
  const void* i2 = nullptr;
  const void* i3 = nullptr;
  void* out = nullptr;
  int ndim = 0;
  int64_t out_sizes[kMaxCopyDims] = {};
  int64_t out_strides[kMaxCopyDims] = {};
  int64_t strides1[kMaxCopyDims] = {};
  int64_t strides2[kMaxCopyDims] = {};
  int64_t strides3[kMaxCopyDims] = {};
  // the dims summed in the first stage (i1 * i2) and the second (* i3), with
  // the extent each runs over
  int count12 = 0;
  int dims12[kMaxCopyDims] = {};
  int64_t sizes12[kMaxCopyDims] = {};
  int count23 = 0;
  int dims23[kMaxCopyDims] = {};
  int64_t sizes23[kMaxCopyDims] = {};
  int unroll_dim = 0;
  int64_t unroll_size = 1;
  bool unroll_summed = false;
};

void launch_trilinear(const TrilinearLaunch& args, int64_t out_numel, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
