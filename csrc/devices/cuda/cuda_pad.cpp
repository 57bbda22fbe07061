// pad on cuda: the validation (ops/pad.cpp) has sized and laid out the output
// and checked every mapping; one kernel copies each output element from the
// input position it maps to, or the value (pad_kernels.cu).
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/pad_kernels.h"
#include "ops/pad.h"

namespace aotishim {
namespace cuda {

namespace {

DevicePad device_mode(PadMode mode) {
  switch (mode) {
    case PadMode::Constant: return DevicePad::Constant;
    case PadMode::Reflect: return DevicePad::Reflect;
    case PadMode::Replicate: return DevicePad::Replicate;
    case PadMode::Circular: return DevicePad::Circular;
  }
  fail("cuda pad: unknown mode");
}

void pad(const PadArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const int64_t nd = a.out.dim();
  AOTISHIM_CHECK(nd <= kMaxCopyDims, "cuda pad: up to ", kMaxCopyDims, " dimensions, got ", nd);
  PadLaunch g;
  g.ndim = static_cast<int>(nd);
  g.mode = device_mode(a.mode);
  for (int64_t d = 0; d < nd; ++d) {
    g.in_sizes[d] = a.self.sizes[d];
    g.in_strides[d] = a.self.strides[d];
    g.out_sizes[d] = a.out.sizes[d];
    g.out_strides[d] = a.out.strides[d];
    g.before[d] = a.before[d];
    g.after[d] = a.after[d];
  }
  const void* value = a.mode == PadMode::Constant ? a.value.data() : nullptr;
  device.count_command();
  launch_pad(g, a.out.itemsize(), a.self.data(), a.out.data(), value, a.out.numel(),
             device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::pad_kernel, DeviceType::CUDA, pad);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
