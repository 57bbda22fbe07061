// _fused_rms_norm (ops/rms_norm.cpp): y = x * rstd * weight over the
// trailing normalized dims, rstd = 1 / sqrt(mean(x^2) + eps), as torch's CPU
// kernel computes it: in float32 for float32/bfloat16/float16 input (float64
// for float64), y rounded once into the input's dtype.
#pragma once

#include <optional>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// input (any strides) seen as rows of `n` elements (the normalized dims);
// weight (optional, any strides, any real floating dtype) of n elements;
// out contiguous of input's sizes and dtype; rstd contiguous, one per row,
// float32 (float64 for float64 input).
struct RmsNormArgs {
  Tensor input, out, rstd;
  std::optional<Tensor> weight;
  int64_t n = 0;
  double eps = 0.0;
};

namespace ops {
AOTISHIM_API extern Op<void(const RmsNormArgs&)> fused_rms_norm_kernel;
}  // namespace ops

}  // namespace aotishim
