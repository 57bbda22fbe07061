// _weight_int8pack_mm (ops/weight_int8pack_mm.cpp): a linear layer with
// int8 weights and one scale per output channel, as torch's weight-only int8
// quantization emits it.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[m, n] = (sum_k self[m, k] * mat2[n, k]) * scales[n]
// self (M, K) float32/bfloat16/float16, mat2 (N, K) int8, scales (N,) of
// self's dtype, out (M, N) contiguous of self's dtype; inputs with any
// strides. Accumulated in float32, rounded once into out (torch's CPU kernel
// does the same).
struct WeightInt8PackMmArgs {
  Tensor self, mat2, scales, out;
};

namespace ops {
AOTISHIM_API extern Op<void(const WeightInt8PackMmArgs&)> weight_int8pack_mm_kernel;
}  // namespace ops

}  // namespace aotishim
