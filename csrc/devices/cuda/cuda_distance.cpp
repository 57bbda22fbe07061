// _cdist_forward and _pdist_forward on cuda: the validation (ops/distance.cpp)
// broadcast the batch dims, made the contiguous output and chose the method
// by torch's compute_mode rule (the same on cuda: the matrix-product form for
// p = 2 when either side has more than 25 rows, or when asked). The direct
// form is one block per distance (distance_kernels.cu); the matrix-product
// form is torch cuda's _euclidean_dist: [-2 x1, |x1|^2, 1] @ [x2, 1, |x2|^2]^T
// through the cuda gemm, then sqrt(max(., 0)).
#include "core/error.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/distance_kernels.h"
#include "ops/distance.h"
#include "ops/gemm.h"

namespace aotishim {
namespace cuda {

namespace {

DistanceLaunch launch_of(const DistanceArgs& a) {
  DistanceLaunch L;
  L.dtype = a.x1.dtype;
  L.x1 = a.x1.data();
  L.out = a.out.data();
  L.p = a.p;
  L.pairwise = a.pairwise;
  const Tensor& x1 = a.x1;
  if (a.pairwise) {
    AOTISHIM_CHECK(x1.dim() == 2, "cuda _pdist_forward: a 2-D input");
    L.r1 = L.r2 = x1.sizes[0];
    L.m = x1.sizes[1];
    L.row_stride1 = x1.strides[0];
    L.col_stride1 = x1.strides[1];
    return L;
  }
  const Tensor& x2 = a.x2;
  const int64_t nb = x1.dim() - 2;
  AOTISHIM_CHECK(nb >= 0 && x2.dim() == x1.dim() && nb <= kMaxCopyDims,
                 "cuda _cdist_forward: operands of one rank with up to ", kMaxCopyDims,
                 " batch dimensions");
  L.x2 = x2.data();
  L.batch_dims = static_cast<int>(nb);
  for (int64_t d = 0; d < nb; ++d) {
    L.batch_sizes[d] = x1.sizes[d];
    L.batch_strides1[d] = x1.strides[d];
    L.batch_strides2[d] = x2.strides[d];
  }
  L.r1 = x1.sizes[nb];
  L.r2 = x2.sizes[nb];
  L.m = x1.sizes[nb + 1];
  L.row_stride1 = x1.strides[nb];
  L.col_stride1 = x1.strides[nb + 1];
  L.row_stride2 = x2.strides[nb];
  L.col_stride2 = x2.strides[nb + 1];
  return L;
}

void euclid_by_product(CudaDevice& device, const DistanceArgs& a, const DistanceLaunch& L) {
  int64_t batch = 1;
  for (int d = 0; d < L.batch_dims; ++d) batch *= L.batch_sizes[d];
  const int64_t width = L.m + 2;
  const cudaStream_t stream = device.stream();
  Tensor a1 = make_empty(device, a.x1.dtype, {batch, L.r1, width});
  Tensor a2 = make_empty(device, a.x1.dtype, {batch, L.r2, width});
  device.count_command();
  launch_euclid_operands(L, a1.data(), a2.data(), stream);
  GemmArgs g;
  g.out = make_view(a.out, {batch, L.r1, L.r2}, {L.r1 * L.r2, L.r2, 1}, a.out.storage_offset);
  g.a = a1;
  g.b = make_view(a2, {batch, width, L.r2}, {L.r2 * width, 1, width}, a2.storage_offset);
  g.alpha = 1.0;
  g.beta = 0.0;
  ops::gemm.run(device, g);
  device.count_command();
  launch_euclid_finish(a.out.data(), a.out.dtype, a.out.numel(), stream);
}

void distance(const DistanceArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  AOTISHIM_CHECK(a.out.is_contiguous(), "cuda distance: the output must be contiguous");
  const DistanceLaunch L = launch_of(a);
  if (a.euclid_mm && !a.pairwise) {
    euclid_by_product(device, a, L);
    return;
  }
  device.count_command();
  launch_distance(L, a.out.numel(), device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::distance_kernel, DeviceType::CUDA, distance);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
