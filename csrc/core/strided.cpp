#include "core/strided.h"

#include <algorithm>

namespace aotishim {

MatrixView row_major_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  if (cols <= 1 || cs == 1) {  // rows of unit-stride elements
    const int64_t ld = rows <= 1 ? c1 : rs;
    if (ld >= c1) return {true, false, ld};
  }
  if (rows <= 1 || rs == 1) {  // columns of unit-stride elements: the transpose
    const int64_t ld = cols <= 1 ? r1 : cs;
    if (ld >= r1) return {true, true, ld};
  }
  return {};
}

std::vector<WalkDim> coalesce_dims(const std::vector<int64_t>& sizes,
                                   const std::vector<const std::vector<int64_t>*>& strides) {
  std::vector<WalkDim> dims;
  const size_t operands = strides.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    WalkDim dim{sizes[d], std::vector<int64_t>(operands)};
    for (size_t o = 0; o < operands; ++o) dim.strides[o] = (*strides[o])[d];
    bool mergeable = !dims.empty();
    for (size_t o = 0; mergeable && o < operands; ++o)
      mergeable = dims.back().strides[o] == dim.size * dim.strides[o];
    if (mergeable) {
      dims.back().size *= dim.size;
      dims.back().strides = dim.strides;
    } else {
      dims.push_back(std::move(dim));
    }
  }
  return dims;
}

std::vector<int64_t> dense_strides_like(const std::vector<int64_t>& sizes,
                                        const std::vector<int64_t>& strides) {
  const size_t n = sizes.size();
  // > 0: dimension a lies outside b; < 0: inside; 0: either (keep the order).
  auto outer = [&](size_t a, size_t b) -> int {
    if (strides[a] == 0 || strides[b] == 0) return 0;
    if (strides[a] != strides[b]) return strides[a] > strides[b] ? 1 : -1;
    return sizes[a] > sizes[b] ? 1 : 0;
  };
  std::vector<size_t> order(n);  // innermost first; starts as the contiguous order
  for (size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  // Insertion sort: stable, and a stride-0 dimension stops nothing from passing.
  for (size_t i = 1; i < n; ++i) {
    size_t moving = i;
    for (size_t j = i; j-- > 0;) {
      const int c = outer(order[j], order[moving]);
      if (c > 0) {
        std::swap(order[j], order[moving]);
        moving = j;
      } else if (c < 0) {
        break;
      }
    }
  }
  std::vector<int64_t> out(n, 1);
  int64_t next = 1;
  for (size_t dim : order) {
    out[dim] = next;
    next *= std::max<int64_t>(sizes[dim], 1);
  }
  return out;
}

bool strides_like_channels_last(const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& strides) {
  const int64_t nd = static_cast<int64_t>(sizes.size());
  if (nd != 4 && nd != 5) return false;
  if (strides[1] == 0) return false;
  // Dims from the fastest-varying in channels-last: C, then spatial from the
  // last, then N.
  std::vector<int64_t> order = {1};
  for (int64_t d = nd - 1; d >= 2; --d) order.push_back(d);
  order.push_back(0);
  int64_t min = 0;
  for (int64_t d : order) {
    if (sizes[d] == 0) return false;
    if (strides[d] < min) return false;
    // N with the channel's own stride: (N, 1, 1, 1) contiguous, or a slice
    // of it; the contiguous reading wins.
    if (d == 0 && min == strides[1]) return false;
    min = strides[d];
    if (sizes[d] > 1) min *= sizes[d];
  }
  return true;
}

// Channels-last strides for sizes (N, C, *spatial).
std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& sizes) {
  const size_t nd = sizes.size();
  std::vector<int64_t> strides(nd);
  int64_t step = 1;
  strides[1] = step;
  step *= std::max<int64_t>(sizes[1], 1);
  for (size_t d = nd - 1; d >= 2; --d) {
    strides[d] = step;
    step *= std::max<int64_t>(sizes[d], 1);
  }
  strides[0] = step;
  return strides;
}

}  // namespace aotishim
