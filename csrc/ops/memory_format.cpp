#include "ops/memory_format.h"

#include <initializer_list>

namespace aotishim {
namespace ops {
namespace {

// torch's is_channels_last_strides_{2d,3d}: the dims in channels-last order
// (C fastest, N slowest) have non-decreasing strides, with its tie-breaks
// toward contiguous for ambiguous shapes.
bool strides_like_channels_last(const Tensor& t, std::initializer_list<int> order) {
  if (t.strides[1] == 0) return false;
  int64_t min = 0;
  for (int d : order) {
    if (t.sizes[d] == 0) return false;
    if (t.strides[d] < min) return false;
    if (d == 0 && min == t.strides[1]) return false;
    min = t.strides[d];
    if (t.sizes[d] > 1) min *= t.sizes[d];
  }
  return true;
}

}  // namespace

MemoryFormat suggest_memory_format(const Tensor& t) {
  if (t.dim() == 4 && strides_like_channels_last(t, {1, 3, 2, 0})) return MemoryFormat::ChannelsLast;
  if (t.dim() == 5 && strides_like_channels_last(t, {1, 4, 3, 2, 0}))
    return MemoryFormat::ChannelsLast3d;
  return MemoryFormat::Contiguous;
}

std::vector<int64_t> strides_for(const std::vector<int64_t>& sizes, MemoryFormat format) {
  if (format == MemoryFormat::Contiguous) return contiguous_strides(sizes);
  // C fastest, then the spatial dims from the last, then N
  const std::vector<int> order = format == MemoryFormat::ChannelsLast
                                     ? std::vector<int>{1, 3, 2, 0}
                                     : std::vector<int>{1, 4, 3, 2, 0};
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (int d : order) {
    strides[d] = running;
    running *= sizes[d];  // torch multiplies the sizes as they are (0 and 1 too)
  }
  return strides;
}

}  // namespace ops
}  // namespace aotishim
