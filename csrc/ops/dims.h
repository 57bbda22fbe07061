// Dimension arguments as torch reads them: negative dims count from the end,
// and a 0-d tensor has one dimension of size 1 for this purpose (dim 0 or -1).
#pragma once

#include <cstdint>
#include <vector>

#include "core/error.h"

namespace aotishim {
namespace ops {

inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  const int64_t n = ndim == 0 ? 1 : ndim;
  AOTISHIM_CHECK(dim >= -n && dim < n, op, ": dimension out of range (expected to be in range of [",
                 -n, ", ", n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

// Size of `dim` (already wrapped); 1 for a 0-d tensor.
inline int64_t size_at(const std::vector<int64_t>& sizes, int64_t dim) {
  return sizes.empty() ? 1 : sizes[dim];
}

}  // namespace ops
}  // namespace aotishim
