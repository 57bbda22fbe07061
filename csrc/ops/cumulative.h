// Cumulative sum, product and log-sum-exp along one dimension (cumsum,
// cumprod, logcumsumexp).
#pragma once

#include <cstdint>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class CumulativeKind { Sum, Product, LogSumExp };

// out[..., i, ...] = self[..., 0, ...] (+ or *) ... self[..., i, ...] along
// `dim` (LogSumExp: log(exp(self[..., 0, ...]) + ... + exp(self[..., i, ...])),
// floating dtypes only). out is fresh and contiguous, of the result dtype; self is any view of
// any dtype, each element converted to out's dtype before it is accumulated
// (torch converts the input first). Accumulation is in torch's CPU
// accumulation type of out's dtype: double for float32/float64, float for
// bfloat16/float16, int64 for integers. 0-d tensors arrive as shape [1].
struct CumulativeArgs {
  Tensor out;
  Tensor self;
  int64_t dim = 0;
  CumulativeKind kind = CumulativeKind::Sum;
};

namespace ops {
AOTISHIM_API extern Op<void(const CumulativeArgs&)> cumulative;
}  // namespace ops

}  // namespace aotishim
