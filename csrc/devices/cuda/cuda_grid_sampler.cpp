// grid_sampler_3d on cuda: the validation (ops/grid_sampler.cpp) checked the
// operands and made the contiguous output (torch cuda's layout too); one
// kernel samples every output point (sampling_kernels.cu).
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/sampling_kernels.h"
#include "ops/grid_sampler.h"

namespace aotishim {
namespace cuda {

namespace {

void grid_sampler_3d(const GridSampleArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  AOTISHIM_CHECK(a.input.dim() == 5 && a.grid.dim() == 5 && a.out.dim() == 5,
                 "cuda grid_sampler_3d: 5-D input, grid and output");
  GridSampleLaunch L;
  L.dtype = a.input.dtype;
  L.input = a.input.data();
  L.grid = a.grid.data();
  L.out = a.out.data();
  for (int d = 0; d < 5; ++d) {
    L.input_sizes[d] = a.input.sizes[d];
    L.input_strides[d] = a.input.strides[d];
    L.grid_strides[d] = a.grid.strides[d];
    L.out_sizes[d] = a.out.sizes[d];
    L.out_strides[d] = a.out.strides[d];
  }
  L.interpolation = static_cast<int>(a.interpolation);
  L.padding = static_cast<int>(a.padding);
  L.align_corners = a.align_corners;
  device.count_command();
  launch_grid_sampler_3d(L, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::grid_sampler_3d_kernel, DeviceType::CUDA, grid_sampler_3d);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
