// Pointwise arithmetic (ops/pointwise.cpp): add, mul and abs with torch's
// type promotion, broadcasting and output strides (TensorIterator's).
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class PointwiseKind { Add, Mul, Abs, Polar };

// out = a + alpha * b, a * b, |a| or polar(a, b) = a * (cos b + i sin b). a and b are already in the computation
// dtype (out's; for abs of a complex tensor and for polar, out's real part type) and
// broadcast to out's sizes (stride 0 where they repeat); b is unused for abs.
struct PointwiseArgs {
  PointwiseKind kind = PointwiseKind::Mul;
  Tensor out;
  Tensor a;
  Tensor b;
  double alpha = 1.0;
};

namespace ops {
AOTISHIM_API extern Op<void(const PointwiseArgs&)> pointwise_kernel;
}  // namespace ops

}  // namespace aotishim
