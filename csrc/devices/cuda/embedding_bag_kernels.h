// _embedding_bag's kernels on cuda (embedding_bag_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

// A 1-D int32 or int64 vector of `size` elements at `stride`.
struct IndexVector {
  const void* data = nullptr;
  bool is32 = false;
  int64_t stride = 1;
  int64_t size = 0;
};

// What the check found: code 0 (all well), 1 offsets[0] != 0, 2 offsets
// decreasing at `position`, 3 the last offset past the indices, 4 an index
// out of [0, rows) at `position`; `value` is the offending value.
struct BagCheck {
  int64_t code, position, value;
};

// Fills *out (device memory, 3 int64) with one problem found, if any.
void launch_embedding_bag_check(const IndexVector& indices, const IndexVector& offsets,
                                int64_t rows, BagCheck* out, cudaStream_t stream);

struct EmbeddingBagLaunch {
  DType dtype = DType::Float32;  // weight, output, per-sample weights
  const void* weight = nullptr;
  int64_t ws0 = 0, ws1 = 0, rows = 0, D = 0;
  IndexVector indices, offsets;
  const void* per_sample_weights = nullptr;  // null: none
  int64_t psw_stride = 0;
  int64_t mode = 0, padding_idx = -1, bags = 0;
  void* output = nullptr;  // (bags, D) packed
  // The auxiliary outputs (packed, int32 when aux32, else int64); zeroed by
  // the caller. max_indices is written in max mode only.
  bool aux32 = false;
  void* offset2bag = nullptr;
  void* bag_size = nullptr;
  void* max_indices = nullptr;
};

void launch_embedding_bag(const EmbeddingBagLaunch& launch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
