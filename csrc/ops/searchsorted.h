// searchsorted (ops/searchsorted.cpp): torch.searchsorted(sorted_sequence,
// self, out_int32, right, side, sorter), validated and with both tensors in
// one (promoted) dtype; devices register the kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[..., j] = the insertion point of self[..., j] in the line of `sequence`
// that belongs to it (the only line of a 1-D sequence, else the line with the
// same leading indices): the first position whose element is >= the value
// (> with `right`), reading the line through `sorter` when given. The search
// is torch's bisection exactly, so NaN (in either) lands where torch puts it.
struct SearchsortedArgs {
  Tensor sequence;           // 1-D, or self's leading sizes + a last dim
  Tensor self;               // sequence's dtype
  Tensor out;                // self's sizes; int64 or int32
  bool has_sorter = false;
  Tensor sorter;             // int64, sequence's sizes, entries in range
  bool right = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const SearchsortedArgs&)> searchsorted_kernel;
}  // namespace ops

}  // namespace aotishim
