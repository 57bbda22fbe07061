// segment_reduce (ops/segment_reduce.cpp): reductions over consecutive
// segments of data along one axis.
#pragma once

#include <optional>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class SegmentReduce { Max, Mean, Min, Sum, Prod };

// data (floating) is seen as (outer, size along axis, inner); segments
// (int64 or int32, packed) hold, per outer index, either the segments'
// lengths (outer, count) or their offsets (outer, count + 1). out (outer,
// count, inner) packed, data's dtype: each segment reduced from `initial`
// (else -inf, +inf, 0 or 1), in order, in data's dtype (max and min
// propagate NaN); mean divides by the length (an empty segment without an
// initial value is NaN). The kernel checks that every segment lies inside
// the axis, and (unless unsafe) that lengths cover it exactly.
struct SegmentReduceArgs {
  Tensor data, segments, out;
  int64_t outer = 1, axis_size = 0, inner = 1, count = 0;
  bool offsets = false;
  bool unsafe = false;  // lengths need not sum to the axis' size
  SegmentReduce reduce = SegmentReduce::Sum;
  std::optional<double> initial;
};

namespace ops {
AOTISHIM_API extern Op<void(const SegmentReduceArgs&)> segment_reduce_kernel;
}  // namespace ops

}  // namespace aotishim
