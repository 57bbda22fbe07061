// index_put (ops/index_put.cpp): out = self with out[indices] = values, or
// += values when accumulating; the kernel writes in place into `target`.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/advanced_index.h"
#include "ops/op.h"

namespace aotishim {

// For every position p of plan.sizes (row-major), the element of target
// that index.Tensor would read at p is set to values[p] (values is target's
// dtype, seen at plan.sizes), or has it added when accumulating (serially,
// in that order, each sum rounded to the dtype; bool accumulates as or).
// plan.self_strides are target's. The kernel checks every index before
// writing anything.
struct IndexPutArgs {
  Tensor target, values;
  IndexPlan plan;
  bool accumulate = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const IndexPutArgs&)> index_put_kernel;
}  // namespace ops

}  // namespace aotishim
