// Double scalars in a tensor's dtype, as torch casts them (fill_, a pad
// value, a scalar operand): the checked conversion and a 0-d tensor holding
// the converted value.
#pragma once

#include "core/device.h"
#include "core/tensor.h"

namespace aotishim {
namespace ops {

// Throws torch's "value cannot be converted to type ... without overflow"
// unless `v` fits `t`: integers within their range (no NaN), real floats any
// value but finite ones beyond their largest; bool and complex take all.
void check_scalar_fits(double v, DType t);

// A 0-d tensor on `device` holding `value` converted to `dtype`.
Tensor scalar_in_dtype(Device& device, double value, DType dtype);

}  // namespace ops
}  // namespace aotishim
