#include "ops/tensor_iterator.h"

#include <algorithm>
#include <utility>

namespace aotishim {
namespace ops {
namespace {

bool is_channels_last(const Tensor& t) {
  if (t.dim() != 4) return false;
  int64_t expected = 1;
  for (int d : {1, 3, 2, 0}) {
    if (t.sizes[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

std::vector<int64_t> channels_last_strides(const std::vector<int64_t>& s) {
  return {s[2] * s[3] * s[1], 1, s[3] * s[1], s[1]};
}

}  // namespace

std::vector<int64_t> broadcast_strides(const Tensor& t, const std::vector<int64_t>& shape) {
  const size_t n = shape.size(), lead = n - t.sizes.size();
  std::vector<int64_t> out(n, 0);
  for (size_t i = lead; i < n; ++i) {
    const int64_t size = t.sizes[i - lead];
    out[i] = size == 1 && shape[i] != 1 ? 0 : t.strides[i - lead];
  }
  return out;
}

std::vector<int64_t> output_strides(const std::vector<const Tensor*>& inputs,
                                    const std::vector<int64_t>& shape) {
  const bool same_shape = std::all_of(inputs.begin(), inputs.end(),
                                      [&](const Tensor* t) { return t->sizes == shape; });
  if (same_shape) {
    if (std::all_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return t->is_contiguous(); }))
      return contiguous_strides(shape);
    if (std::all_of(inputs.begin(), inputs.end(), [](const Tensor* t) { return is_channels_last(*t); }))
      return channels_last_strides(shape);
    const bool dense = std::all_of(inputs.begin(), inputs.end(),
                                   [](const Tensor* t) { return t->is_non_overlapping_and_dense(); });
    const bool agree = std::all_of(inputs.begin(), inputs.end(),
                                   [&](const Tensor* t) { return t->strides == inputs[0]->strides; });
    if (dense && agree) return inputs[0]->strides;
  }
  const int64_t n = static_cast<int64_t>(shape.size());
  if (n == 0) return {};
  std::vector<std::vector<int64_t>> strides;
  for (const Tensor* t : inputs) strides.push_back(broadcast_strides(*t, shape));
  // perm[0] is the fastest-moving dim; start from the row-major order.
  std::vector<int64_t> perm(n);
  for (int64_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  auto should_swap = [&](int64_t d0, int64_t d1) {
    for (const auto& st : strides) {
      const int64_t s0 = st[d0], s1 = st[d1];
      if (s0 == 0 || s1 == 0) continue;  // broadcast in either: no opinion
      if (s0 < s1) return -1;
      if (s0 > s1) return 1;
      if (shape[d0] > shape[d1]) return 1;  // equal strides: the smaller dim first
    }
    return 0;
  };
  if (n > 1) {
    for (int64_t i = 1; i < n; ++i) {
      int64_t d1 = i;
      for (int64_t d0 = i - 1; d0 >= 0; --d0) {
        const int cmp = should_swap(perm[d0], perm[d1]);
        if (cmp > 0) {
          std::swap(perm[d0], perm[d1]);
          d1 = d0;
        } else if (cmp < 0) {
          break;
        }
      }
    }
  }
  std::vector<int64_t> out(n);
  int64_t running = 1;
  for (int64_t i = 0; i < n; ++i) {
    out[perm[i]] = running;
    running *= shape[perm[i]] > 0 ? shape[perm[i]] : 1;
  }
  return out;
}

}  // namespace ops
}  // namespace aotishim
