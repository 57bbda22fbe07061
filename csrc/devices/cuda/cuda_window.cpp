// hann_window on cuda: the validation (ops/window.cpp) made the 1-D output and
// filled the windows of length 0 and 1; the kernel computes the rest in torch
// cuda's steps (misc_kernels.cu).
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/misc_kernels.h"
#include "ops/window.h"

namespace aotishim {
namespace cuda {

namespace {

void hann_window(const WindowArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  AOTISHIM_CHECK(a.out.dim() == 1, "cuda hann_window: a 1-D output");
  device.count_command();
  launch_hann_window(a.out.data(), a.out.dtype, a.out.sizes[0], a.out.strides[0], a.n,
                     device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::hann_window_kernel, DeviceType::CUDA, hann_window);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
