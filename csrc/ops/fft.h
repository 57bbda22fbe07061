// The FFT ops (ops/fft.cpp): _fft_c2c, _fft_r2c and _fft_c2r, as torch's CPU
// FFT computes them.
#pragma once

#include <cstdint>
#include <vector>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class FftKind { C2C, R2C, C2R };

// One transform over the dimensions `dims` (distinct, in range, at least
// one), scaled by `scale`:
//   C2C: complex in, complex out (sizes equal), forward or backward.
//   R2C: real in, complex out, forward; out's size along dims.back() is the
//        input's n / 2 + 1 (the onesided half).
//   C2R: complex in, real out, backward, one dim only: in's size along it is
//        out's n / 2 + 1; the imaginary parts of the zero and (even n)
//        Nyquist frequencies are ignored, as for a Hermitian input.
// out is fresh and dense; in may have any strides. Part types match
// (float with complex64, double with complex128).
struct FftArgs {
  FftKind kind = FftKind::C2C;
  Tensor in, out;
  std::vector<int64_t> dims;
  bool forward = true;
  double scale = 1.0;
};

namespace ops {
AOTISHIM_API extern Op<void(const FftArgs&)> fft_kernel;
}  // namespace ops

}  // namespace aotishim
