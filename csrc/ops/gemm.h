// Matrix products for the fallback ops. The device-independent layer
// (ops/gemm.cpp) validates and normalizes mm/addmm/bmm into GemmArgs; each
// device runs GemmArgs on its stream.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"

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
};

// The ATen-shaped entry points; they dispatch to out's device. Exported for
// the backend plugins' shims (aoti_torch_cuda_*).
AOTISHIM_API void mm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);
AOTISHIM_API void addmm_out(const Tensor& out, const Tensor& self, const Tensor& mat1,
                            const Tensor& mat2, double beta, double alpha);
AOTISHIM_API void bmm_out(const Tensor& out, const Tensor& self, const Tensor& mat2);

}  // namespace aotishim
