// Shared geometry of the pooling ops (ops/pooling.cpp, ops/adaptive_pool.cpp,
// ops/fractional_max_pool.cpp, ops/max_unpool.cpp): their kernels see every
// tensor as 5-D (N, C, D, H, W), a 2-D op's with D = 1 and an unbatched
// input's with N = 1, so one kernel serves both ranks and any strides.
#pragma once

#include <cstdint>
#include <vector>

#include "core/strided.h"
#include "core/tensor.h"

namespace aotishim {

// t (batch dims + `spatial` dims, batch dims 1 or 2) as a 5-D view of the
// same elements: size-1 dims inserted for a missing N and, for spatial == 2,
// for D.
inline Tensor pool_view_5d(const Tensor& t, int64_t spatial) {
  std::vector<int64_t> sizes = t.sizes, strides = t.strides;
  if (spatial == 2) {
    sizes.insert(sizes.end() - 2, 1);
    strides.insert(strides.end() - 2, 0);
  }
  if (sizes.size() == 4) {
    sizes.insert(sizes.begin(), 1);
    strides.insert(strides.begin(), 0);
  }
  return make_view(t, sizes, strides, t.storage_offset);
}

// The strides torch gives a pooling op's output of `sizes` for input `self`
// (`spatial` dims) when the op follows its input's memory format:
// channels-last for a batched input whose strides are like channels-last,
// else contiguous (an unbatched input's output is always contiguous, even
// when its strides read as a channels-last layout of one rank less).
inline std::vector<int64_t> pool_output_strides(const Tensor& self, int64_t spatial,
                                                const std::vector<int64_t>& sizes) {
  if (self.dim() == spatial + 2 && strides_like_channels_last(self.sizes, self.strides))
    return channels_last_strides(sizes);
  return contiguous_strides(sizes);
}

// A pooling parameter list of `n` ints: `n` values, or one for all (an
// empty list gives `fallback`, when there is one).
inline bool expand_pool_param(const int64_t* values, int64_t len, int64_t n,
                              const std::vector<int64_t>* fallback, std::vector<int64_t>& out) {
  if (len == 0 && fallback != nullptr) {
    out = *fallback;
    return true;
  }
  if (values == nullptr || (len != 1 && len != n)) return false;
  out.assign(static_cast<size_t>(n), values[0]);
  for (int64_t i = 0; i < len; ++i) out[static_cast<size_t>(i)] = values[i];
  return true;
}

}  // namespace aotishim
