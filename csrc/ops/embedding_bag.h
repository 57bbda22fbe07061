// _embedding_bag / _embedding_bag_forward_only (ops/embedding_bag.cpp): sums,
// means or maxima of bags of embedding rows, with the auxiliary outputs torch
// returns beside them.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// Bag b holds indices[offsets[b] .. end), end = offsets[b + 1] or, for the
// last bag, the end of indices (torch ignores a trailing offset there too).
// Indices equal to padding_idx (when >= 0) are left out of every result.
//   output (bags, D) = per bag: sum of weight rows (times per_sample_weights
//     when given), their mean, or their per-column maximum; 0 for an empty bag
//   offset2bag (N,) = each index's bag, when it is allocated non-empty
//   bag_size = the indices counted per bag (mean, max), or zeros (sum)
//   max_indices = the weight row of each maximum (max, (bags, D)), a copy of
//     bag_size (mean), or zeros (sum)
// On cuda the auxiliary outputs are torch cuda's: offset2bag (N,) always,
// bag_size (offsets,) counting the indices of every bag (0 past the last),
// max_indices (bags, D) in max mode (-1 for an empty bag), else (0,).
// weight (num_weights, D) floating, indices/offsets int32 or int64, any
// strides; the outputs are contiguous, allocated by the validation.
struct EmbeddingBagArgs {
  Tensor weight, indices, offsets, per_sample_weights;
  bool has_per_sample_weights = false;
  int64_t mode = 0;  // 0 sum, 1 mean, 2 max
  int64_t padding_idx = -1;
  int64_t bags = 0;
  Tensor output, offset2bag, bag_size, max_indices;
};

namespace ops {
AOTISHIM_API extern Op<void(const EmbeddingBagArgs&)> embedding_bag_kernel;
}  // namespace ops

}  // namespace aotishim
