// add, mul, abs, polar, angle, gcd and pow on cuda (pointwise_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

enum class DevicePointwise : int32_t { Add, Mul, Abs, Polar, Angle, Gcd, Pow, PowScalar };

// out = a + alpha * b, a * b, |a|, polar(a, b), angle(a), gcd(a, b), a ** b
// or a ** exponent (PowScalar) elementwise over `sizes` (ndim <=
// kMaxCopyDims); a and b in the computation dtype (out's; for abs and angle
// of complex and for polar, out's real part type), broadcast by stride 0.
void launch_pointwise(DevicePointwise kind, const StridedView& out, const StridedView& a,
                      const StridedView& b, double alpha, double exponent, const int64_t* sizes,
                      int ndim, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
