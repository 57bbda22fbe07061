// pad (ops/pad.cpp): constant, reflect, replicate and circular padding of the
// last dims, as torch's aten::pad.
#pragma once

#include <vector>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class PadMode { Constant, Reflect, Replicate, Circular };

// out[o] = self[i] where, per dim d, i[d] = o[d] - before[d] mapped into
// [0, self.sizes[d]): reflected about the edges (Reflect), clamped
// (Replicate) or wrapped around what negative pads leave of the dim
// (Circular: torch crops first, then wraps); in Constant mode a position outside
// self takes `value` (a 0-d tensor of self's dtype). Validation has checked
// that every mapping lands inside self (which is not empty where read).
struct PadArgs {
  Tensor self, out, value;
  std::vector<int64_t> before, after;  // per dim; 0 where nothing is padded
  PadMode mode = PadMode::Constant;
};

namespace ops {
AOTISHIM_API extern Op<void(const PadArgs&)> pad_kernel;
}  // namespace ops

}  // namespace aotishim
