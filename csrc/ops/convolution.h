// Convolution (aten::convolution): ops/convolution.cpp validates the shim's
// arguments, allocates the output in the layout torch gives it, and runs the
// device's `conv` kernel on one ConvArgs.
#pragma once

#include <cstdint>
#include <vector>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// One N-d convolution (1 to 3 spatial dims), forward or transposed.
// Guarantees to the kernel:
// - input (N, Cin, *in) and weight are views as they lie (any non-negative
//   strides, any offset); weight is (Cout, Cin/groups, *k) forward and
//   (Cin, Cout/groups, *k) transposed; bias, when present, has Cout elements.
// - out (N, Cout, *out) is freshly allocated, dense, either contiguous or
//   channels-last (its spatial dims always merge into one stride), overlaps
//   nothing, and has at least one element.
// - all tensors share a device and a dtype (float32, float64, float16 or
//   bfloat16; a kernel refuses those it lacks).
// - stride/padding/dilation/output_padding have one entry per spatial dim and
//   the geometry is valid (every size below is positive).
struct ConvArgs {
  Tensor input;
  Tensor weight;
  bool has_bias = false;
  Tensor bias;
  Tensor out;
  std::vector<int64_t> stride, padding, dilation, output_padding;
  int64_t groups = 1;
  bool transposed = false;
};

namespace ops {
// The kernel slot of convolution.
AOTISHIM_API extern Op<void(const ConvArgs&)> conv;
}  // namespace ops

}  // namespace aotishim
