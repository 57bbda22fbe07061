// _trilinear on cuda: the validation (ops/trilinear.cpp) expanded the three
// operands to one rank and split the summed dims into torch's two stages;
// one kernel computes each output element (trilinear_kernels.cu).
#include <algorithm>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/trilinear_kernels.h"
#include "ops/trilinear.h"

namespace aotishim {
namespace cuda {

namespace {

void trilinear(const TrilinearArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const int64_t nd = a.out.dim();
  AOTISHIM_CHECK(nd <= kMaxCopyDims, "cuda _trilinear: up to ", kMaxCopyDims,
                 " dimensions, got ", nd);
  TrilinearLaunch L;
  L.dtype = a.out.dtype;
  L.i1 = a.i1.data();
  L.i2 = a.i2.data();
  L.i3 = a.i3.data();
  L.out = a.out.data();
  L.ndim = static_cast<int>(nd);
  for (int64_t d = 0; d < nd; ++d) {
    L.out_sizes[d] = a.out.sizes[d];
    L.out_strides[d] = a.out.strides[d];
    L.strides1[d] = a.i1.strides[d];
    L.strides2[d] = a.i2.strides[d];
    L.strides3[d] = a.i3.strides[d];
    const int64_t z12 = std::max(a.i1.sizes[d], a.i2.sizes[d]);
    if (a.sum12[d]) {
      L.dims12[L.count12] = static_cast<int>(d);
      L.sizes12[L.count12++] = z12;
    } else if (a.sum23[d]) {
      L.dims23[L.count23] = static_cast<int>(d);
      L.sizes23[L.count23++] = std::max(z12, a.i3.sizes[d]);
    }
  }
  L.unroll_dim = static_cast<int>(a.unroll_dim);
  L.unroll_summed = a.unroll_summed;
  for (const Tensor* t : {&a.i1, &a.i2, &a.i3})
    if (t->sizes[a.unroll_dim] != 1) L.unroll_size = t->sizes[a.unroll_dim];
  device.count_command();
  launch_trilinear(L, a.out.numel(), device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::trilinear_kernel, DeviceType::CUDA, trilinear);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
