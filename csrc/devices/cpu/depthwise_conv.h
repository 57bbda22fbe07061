// Depthwise convolution on host memory: the cpu conv kernel's path for one
// input channel per group (MobileNet, EfficientNet, ConvNeXt), where a GEMM
// per channel would be mostly call overhead.
#pragma once

#include "ops/convolution.h"

namespace aotishim::cpu {

// Runs the forward convolution `a` whose groups each hold one input channel
// (any number of output channels per group). Takes float32, float64 and
// bfloat16 (summed in float32), inputs and weights of any strides, and the
// output in either layout ConvArgs allows.
void depthwise_conv(const ConvArgs& a);

}  // namespace aotishim::cpu
