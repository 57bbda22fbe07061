// Layout rules of torch's TensorIterator that ops computing elementwise
// results share (pointwise arithmetic, advanced indexing): how an operand is
// seen at a broadcast shape, and the strides TensorIterator gives a new
// output. Generated code assumes those strides for what a fallback returns.
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace aotishim {
namespace ops {

// t's strides seen at `shape`: leading dims added, repeated dims stride 0
// (TensorIterator keeps a size-1 dim's own stride when the shape is 1 too).
std::vector<int64_t> broadcast_strides(const Tensor& t, const std::vector<int64_t>& shape);

// The output strides TensorIterator gives: the inputs' common layout when
// they all have the output's shape and agree (contiguous, channels-last, or
// one dense layout), else dims ordered by the inputs' strides.
std::vector<int64_t> output_strides(const std::vector<const Tensor*>& inputs,
                                    const std::vector<int64_t>& shape);

}  // namespace ops
}  // namespace aotishim
