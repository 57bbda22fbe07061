// add, mul, abs and polar on cuda: the validation (ops/pointwise.cpp) has
// already cast and broadcast the operands; one kernel reads them through
// their strides (pointwise_kernels.cu).
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/pointwise_kernels.h"
#include "ops/pointwise.h"

namespace aotishim {
namespace cuda {

namespace {

DevicePointwise device_kind(PointwiseKind kind) {
  switch (kind) {
    case PointwiseKind::Add: return DevicePointwise::Add;
    case PointwiseKind::Mul: return DevicePointwise::Mul;
    case PointwiseKind::Abs: return DevicePointwise::Abs;
    case PointwiseKind::Polar: return DevicePointwise::Polar;
    // The cpu has these; cuda has no kernel for them yet.
    case PointwiseKind::Angle: fail("no angle kernel for cuda");
    case PointwiseKind::Gcd: fail("no gcd kernel for cuda");
    case PointwiseKind::Pow:
    case PointwiseKind::PowScalar: fail("no pow kernel for cuda");
  }
  fail("cuda pointwise: unknown kind");
}

void pointwise(const PointwiseArgs& args) {
  auto& device = static_cast<CudaDevice&>(args.out.device());
  DeviceScope on(device.index());
  const Tensor& b = args.kind == PointwiseKind::Abs ? args.a : args.b;
  device.count_command();
  launch_pointwise(device_kind(args.kind), view_of(args.out), view_of(args.a), view_of(b),
                   args.alpha, args.out.sizes.data(), static_cast<int>(args.out.dim()),
                   device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::pointwise_kernel, DeviceType::CUDA, pointwise);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
