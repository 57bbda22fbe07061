// torch's suggest_memory_format: the layout a new tensor made "like" another
// takes in ops that do not go through TensorIterator (cat, pad): channels-last
// (2-D or 3-D) when the tensor's strides read as it, else contiguous.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace aotishim {
namespace ops {

enum class MemoryFormat { Contiguous, ChannelsLast, ChannelsLast3d };

MemoryFormat suggest_memory_format(const Tensor& t);

// The strides of a new tensor of `sizes` in `format` (a channels-last format
// needs 4 or 5 dims).
std::vector<int64_t> strides_for(const std::vector<int64_t>& sizes, MemoryFormat format);

}  // namespace ops
}  // namespace aotishim
