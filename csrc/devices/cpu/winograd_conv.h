// 3x3 convolutions with unit stride by Winograd's F(2x2, 3x3): the cpu conv
// kernel's path for the dense 3x3 layers of ResNet-style networks, where it
// needs 16 multiply-adds per 2x2 block of outputs and input channel instead
// of 36. The products still go through the BLAS (16 GEMMs, one per point of
// the transformed 4x4 tile), so the saving is in the multiply-adds, and the
// transforms on either side are extra passes over the input and output.
#pragma once

#include "ops/convolution.h"

namespace aotishim::cpu {

// Whether `a` is a convolution this path takes: float32, forward, 2-D, one
// group, a 3x3 kernel with unit stride and dilation (any padding), and
// enough output tiles per weight for the GEMMs' saving to pay for
// transforming the weight on every call (see winograd_conv.cpp).
bool winograd_applies(const ConvArgs& a);

// Runs `a` (winograd_applies(a) holds). Returns false when the input or the
// weight holds an infinity or NaN, having written none or part of the
// output: the transforms add and subtract neighbouring inputs, so an
// infinity becomes inf - inf = NaN in outputs where the direct sum is
// +-inf; the caller then runs the direct convolution, which rewrites all of
// the output.
bool winograd_conv(const ConvArgs& a);

}  // namespace aotishim::cpu
