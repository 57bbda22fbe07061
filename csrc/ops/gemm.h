// Matrix products: mm, addmm and bmm (ops/gemm.cpp) validate and normalise
// into GemmArgs; each device registers a kernel for the `gemm` op that runs
// GemmArgs on its stream. float16 is accepted only on devices whose kernel
// supports it (their kernel rejects it otherwise, in one place).
#pragma once

#include <optional>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[b] = beta * out[b] + alpha * a[b] @ b[b] for every batch b.
// All three are 3-D views (batch, rows, cols) with any non-negative strides,
// on one device, of one dtype; out does not overlap a or b. When beta == 0
// out is not read (NaN in out does not propagate).
struct GemmArgs {
  Tensor out;  // (B, M, N)
  Tensor a;    // (B, M, K)
  Tensor b;    // (B, K, N)
  double alpha = 1.0;
  double beta = 0.0;
  // Only for kernels of devices whose gemm_fuses_row_bias() is true: a
  // (1, M, N) view whose every row is one N-vector of adjacent elements,
  // added to out after alpha * a @ b (beta is then 0); out does not
  // overlap it.
  std::optional<Tensor> row_bias;
};

namespace ops {
// The kernel slot of every matrix product; validation guarantees its promise.
AOTISHIM_API extern Op<void(const GemmArgs&)> gemm;
}  // namespace ops

}  // namespace aotishim
