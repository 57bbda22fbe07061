// _addmm_activation (ops/addmm_activation.cpp): addmm followed by relu or
// gelu on its result, as torch's CPU kernel computes it: the product rounded
// into out's dtype, then the activation applied to out in place.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out := relu(out) or gelu(out) (the exact, erf form) in place; out is a
// fresh contiguous float32, float64, bfloat16 or float16 tensor (the
// reduced types computed in float32).
struct ActivationArgs {
  Tensor out;
  bool gelu = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const ActivationArgs&)> addmm_activation_epilogue;
}  // namespace ops

}  // namespace aotishim
