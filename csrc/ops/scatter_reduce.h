// scatter_reduce.two_out (ops/scatter_reduce.cpp): out = self with src
// reduced into it at index along dim. Validation copies self into out (or
// works in place when out is self) and the device kernel reduces in place.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// Assign is scatter's plain write (the last write in index order wins).
enum class ScatterReduce { Sum, Prod, Mean, Amax, Amin, Assign };

// On entry `out` holds self's values. For every position p of index,
// out[p with dim replaced by index[p]] = reduce(that, src[p]), in row-major
// order of p. Without include_self, every position index reaches starts from
// the reduction's identity instead of self's value (mean then divides by the
// count of src values only). Mean divides by the count (floor division for
// integers); amax/amin propagate NaN. The kernel checks every index against
// out's size before writing anything.
struct ScatterReduceArgs {
  Tensor out;
  Tensor index;  // int64 or int32; index.dim() == out.dim() == src.dim()
  Tensor src;    // out's dtype, at least index's sizes
  int64_t dim = 0;
  ScatterReduce reduce = ScatterReduce::Sum;
  bool include_self = true;
};

namespace ops {
AOTISHIM_API extern Op<void(const ScatterReduceArgs&)> scatter_reduce_kernel;

// out = self with src scattered into it (args' reduce and include_self),
// after torch's checks: `what` names the op in messages, `index_int64_only`
// is scatter's rule (scatter_reduce also takes int32), and src is null for
// scatter's value form (value_src, a tensor of self's dtype broadcast to
// index's sizes, stands for it without the src size check).
void scatter_into(const char* what, const Tensor& out, const Tensor& self, int64_t dim,
                  const Tensor& index, const Tensor* src, const Tensor& value_src,
                  ScatterReduceArgs args, bool index_int64_only);
}  // namespace ops

}  // namespace aotishim
