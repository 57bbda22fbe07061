// _addmm_activation's epilogue on cuda: the product already ran through the
// cuda gemm (ops/addmm_activation.cpp); relu or gelu is applied to the
// contiguous result in place (misc_kernels.cu). gelu is torch cuda's tanh
// form, not the exact erf form of torch's cpu kernel.
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/misc_kernels.h"
#include "ops/addmm_activation.h"

namespace aotishim {
namespace cuda {

namespace {

void addmm_activation(const ActivationArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  AOTISHIM_CHECK(a.out.is_contiguous(), "cuda _addmm_activation: the result must be contiguous");
  device.count_command();
  launch_addmm_activation(a.out.data(), a.out.dtype, a.out.numel(), a.gelu, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::addmm_activation_epilogue, DeviceType::CUDA, addmm_activation);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
