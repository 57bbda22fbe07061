// add, mul, abs, polar, angle, gcd and pow on cuda: the validation
// (ops/pointwise.cpp) has already cast and broadcast the operands; one kernel
// reads them through their strides (pointwise_kernels.cu).
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
    case PointwiseKind::Angle: return DevicePointwise::Angle;
    case PointwiseKind::Gcd: return DevicePointwise::Gcd;
    case PointwiseKind::Pow: return DevicePointwise::Pow;
    case PointwiseKind::PowScalar: return DevicePointwise::PowScalar;
  }
  fail("cuda pointwise: unknown kind");
}

void pointwise(const PointwiseArgs& args) {
  auto& device = static_cast<CudaDevice&>(args.out.device());
  DeviceScope on(device.index());
  // b is unused (and may be undefined) for the one-operand kinds
  const bool unary = args.kind == PointwiseKind::Abs || args.kind == PointwiseKind::Angle ||
                     args.kind == PointwiseKind::PowScalar;
  const Tensor& b = unary ? args.a : args.b;
  device.count_command();
  launch_pointwise(device_kind(args.kind), view_of(args.out), view_of(args.a), view_of(b),
                   args.alpha, args.exponent, args.out.sizes.data(),
                   static_cast<int>(args.out.dim()), device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::pointwise_kernel, DeviceType::CUDA, pointwise);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
