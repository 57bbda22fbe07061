// Pointwise arithmetic (ops/pointwise.cpp): add, mul, abs, polar, angle, gcd
// and pow with torch's type promotion, broadcasting and output strides
// (TensorIterator's).
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class PointwiseKind { Add, Mul, Abs, Polar, Angle, Gcd, Pow, PowScalar };

// out = a + alpha * b, a * b, |a|, polar(a, b) = a * (cos b + i sin b),
// angle(a), gcd(a, b), a ** b, or a ** exponent (PowScalar). a and b are
// already in the computation dtype (out's; for abs and angle of a complex
// tensor and for polar, out's real part type is out's) and broadcast to out's
// sizes (stride 0 where they repeat); b is unused for abs, angle and
// PowScalar. Integer pow is torch's: wrapping products, and a negative
// exponent gives 0 unless the base is 1 or -1.
struct PointwiseArgs {
  PointwiseKind kind = PointwiseKind::Mul;
  Tensor out;
  Tensor a;
  Tensor b;
  double alpha = 1.0;
  double exponent = 1.0;  // PowScalar
};

namespace ops {
AOTISHIM_API extern Op<void(const PointwiseArgs&)> pointwise_kernel;
}  // namespace ops

}  // namespace aotishim
