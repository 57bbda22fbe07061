// hann_window (ops/window.cpp): the periodic Hann window torch's
// hann_window(window_length) gives, in a floating dtype.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[i] = 0.5 - 0.5 * cos(i * (2 pi / (n - 1))), for out's n - 1 elements
// when periodic (the window of length n, its last element dropped; n is
// out's size plus one), computed as torch computes it: the step rounded to
// out's dtype (float for the half types), the product and cosine in it.
// out is 1-D and contiguous, with at least two elements in the n - 1 above
// (the shorter windows are filled by the op).
struct WindowArgs {
  Tensor out;
  int64_t n = 0;  // the length whose n - 1 divides 2 pi
};

namespace ops {
AOTISHIM_API extern Op<void(const WindowArgs&)> hann_window_kernel;
}  // namespace ops

}  // namespace aotishim
