// _grouped_mm (ops/grouped_mm.cpp): several matrix products in one call,
// as mixture-of-experts layers emit it, with torch's CPU operand rules.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// Groups by the operands' ranks (offs: int32 cumulative group ends):
//   2-D a (M, K) x 3-D b (G, K, N): rows offs[g-1]..offs[g] of a times b[g]
//       into the same rows of out (M, N);
//   3-D a (G, M, K) x 2-D b (K, N): a[g] times columns offs[g-1]..offs[g]
//       of b into the same columns of out (M, N);
//   2-D a (M, K) x 2-D b (K, N): columns offs[g-1]..offs[g] of a times the
//       same rows of b into out[g] (G, M, N);
//   3-D x 3-D (no offs): out[g] = a[g] @ b[g].
// out's rows (columns) past the last offset are zero (torch leaves them
// unwritten). One dtype throughout: float32, bfloat16 or float16 (the
// reduced types accumulated in float32 by the gemm).
struct GroupedMmArgs {
  Tensor a, b, out;
  Tensor offs;  // absent (numel 0) for 3-D x 3-D
  bool has_offs = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const GroupedMmArgs&)> grouped_mm_kernel;
}  // namespace ops

}  // namespace aotishim
