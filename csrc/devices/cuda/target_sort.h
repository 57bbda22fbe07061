// The (target element, position) pairs of index_put and the scatter family,
// sorted stably by element on the device (CUB radix sort): each element's
// values then come in index order, for a last write or an ordered reduction.
#pragma once

#include "core/tensor.h"
#include "devices/cuda/cuda_device.h"

namespace aotishim {
namespace cuda {

struct SortedTargets {
  Tensor keys;       // int64 element offsets, ascending
  Tensor positions;  // int64 positions, in index order within each key
  const uint64_t* key_data() const { return reinterpret_cast<const uint64_t*>(keys.data()); }
  const int64_t* position_data() const { return reinterpret_cast<const int64_t*>(positions.data()); }
};

// Sorts `keys` (offsets into `target`, which bounds their bits) with their
// `positions`, on the device's stream; both are int64 tensors of one size.
SortedTargets sort_by_target(CudaDevice& device, const Tensor& keys, const Tensor& positions,
                             const Tensor& target);

}  // namespace cuda
}  // namespace aotishim
