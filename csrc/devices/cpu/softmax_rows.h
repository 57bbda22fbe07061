// Two steps of the cpu attention kernel's softmax over one row of float32
// scores: the row's maximum, then exp(score - maximum) in place and its sum.
// On x86-64 they run in AVX2+FMA or AVX-512 registers where the CPU has
// them, picked once at run time; elsewhere (and on older x86-64) they are
// the scalar loops the kernel had.
#pragma once

#include <cstdint>

namespace aotishim::cpu {

// The largest of x[0, n), as std::max folded left to right from -inf gives
// it: NaNs are skipped, -inf when nothing else is left, and of +0 and -0 the
// one seen first.
float row_max(const float* x, int64_t n);

// x[i] = exp(x[i] - max) for i in [0, n); returns their sum (in another
// order than left to right where vectors are used). Differences that are
// NaN stay NaN, -inf gives 0, and results below float's range go through its
// subnormals to 0, as std::exp.
float exp_sum(float* x, int64_t n, float max);

}  // namespace aotishim::cpu
