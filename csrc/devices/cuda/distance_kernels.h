// _cdist_forward's and _pdist_forward's kernels on cuda (distance_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// Rows of x1 (batch..., r1, m) against rows of x2 (batch..., r2, m), any
// strides (0 where a batch dim is broadcast); out (batch..., r1, r2)
// contiguous. For pdist x1 is (n, m), x2 unused, out the n (n - 1) / 2
// pairs i < j in row order. float32 or float64.
struct DistanceLaunch {
  DType dtype = DType::Float32;
  const void* x1 = nullptr;
  const void* x2 = nullptr;
  void* out = nullptr;
  int batch_dims = 0;
  int64_t batch_sizes[kMaxCopyDims] = {};
  int64_t batch_strides1[kMaxCopyDims] = {};
  int64_t batch_strides2[kMaxCopyDims] = {};
  int64_t r1 = 0, r2 = 0, m = 0;
  int64_t row_stride1 = 0, col_stride1 = 0;
  int64_t row_stride2 = 0, col_stride2 = 0;
  double p = 2.0;
  bool pairwise = false;
};

// Every output as torch cuda's kernels compute it: one block per distance,
// the p-norm's terms reduced over the block (inf: the largest, NaN ignored).
void launch_distance(const DistanceLaunch& args, int64_t out_numel, cudaStream_t stream);

// The operands of torch's matrix-product form of cdist for p = 2:
// a1 (batch, r1, m + 2) = [-2 x1, |x1|^2, 1] and a2 (batch, r2, m + 2) =
// [x2, 1, |x2|^2], both contiguous (`batch` = the product of batch_sizes).
void launch_euclid_operands(const DistanceLaunch& args, void* a1, void* a2, cudaStream_t stream);

// out = sqrt(max(out, 0)) over `numel` contiguous elements (NaN kept), the
// step after the product a1 @ a2^T.
void launch_euclid_finish(void* out, DType dtype, int64_t numel, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
