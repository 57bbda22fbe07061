// topk and sort on the host, line by line along the dim. Equal elements come
// out in the order torch's CPU kernels give them: the same standard-library
// algorithms over (value, index) pairs with the same comparisons, so ties
// resolve identically (sort: std::sort, or std::stable_sort when stable;
// topk: std::partial_sort when k is small against n, else std::nth_element
// and a sort of the first k - 1).
#include <algorithm>
#include <utility>
#include <vector>

#include "devices/cpu/typed_elements.h"
#include "ops/sorting.h"

namespace aotishim {
namespace {

// a before b in descending order; NaN is above everything.
template <typename V>
struct Greater {
  bool operator()(const std::pair<V, int64_t>& a, const std::pair<V, int64_t>& b) const {
    return (cpu::is_nan(a.first) && !cpu::is_nan(b.first)) || a.first > b.first;
  }
};
// a before b in ascending order; NaN is after everything.
template <typename V>
struct Less {
  bool operator()(const std::pair<V, int64_t>& a, const std::pair<V, int64_t>& b) const {
    return (!cpu::is_nan(a.first) && cpu::is_nan(b.first)) || a.first < b.first;
  }
};

template <typename E>
void load_line(std::vector<std::pair<typename E::value, int64_t>>& line,
               const typename E::storage* src, int64_t n, int64_t stride) {
  line.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) line[i] = {E::load(src[i * stride]), i};
}

template <typename E>
void store_line(const std::vector<std::pair<typename E::value, int64_t>>& line, int64_t count,
                typename E::storage* values, int64_t vstride, int64_t* indices,
                int64_t istride) {
  for (int64_t i = 0; i < count; ++i) {
    values[i * vstride] = E::store(line[i].first);
    indices[i * istride] = line[i].second;
  }
}

template <typename E, typename Comp>
void select_top(std::vector<std::pair<typename E::value, int64_t>>& line, int64_t k, bool sorted,
                Comp comp) {
  const int64_t n = static_cast<int64_t>(line.size());
  if (k * 64 <= n) {
    std::partial_sort(line.begin(), line.begin() + k, line.end(), comp);
  } else {
    std::nth_element(line.begin(), line.begin() + (k - 1), line.end(), comp);
    if (sorted) std::sort(line.begin(), line.begin() + (k - 1), comp);
  }
}

// Each line of self along dim as (value, index) pairs, arranged by
// arrange(line, descending_order, ascending_order), then its first `keep`
// pairs stored into values / indices: the walk topk and sort share.
template <typename Arrange>
void per_line(const Tensor& self_t, const Tensor& values_t, const Tensor& indices_t, int64_t dim,
              int64_t keep, const Arrange& arrange) {
  const auto stride_of = [dim](const Tensor& t) { return t.dim() == 0 ? 1 : t.strides[dim]; };
  const int64_t n = self_t.dim() == 0 ? 1 : self_t.sizes[dim];
  const int64_t s_stride = stride_of(self_t), v_stride = stride_of(values_t),
                i_stride = stride_of(indices_t);
  cpu::visit_dtype(self_t.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* self = cpu::typed<S>(self_t);
    S* values = cpu::typed<S>(values_t);
    int64_t* indices = cpu::typed<int64_t>(indices_t);
    cpu::for_each_line(self_t.sizes, dim, {&self_t.strides, &values_t.strides, &indices_t.strides},
                       n, [&](const std::vector<int64_t>& off) {
      std::vector<std::pair<V, int64_t>> line;
      load_line<E>(line, self + off[0], n, s_stride);
      arrange(elem, line, Greater<V>{}, Less<V>{});
      store_line<E>(line, keep < 0 ? n : keep, values + off[1], v_stride, indices + off[2],
                    i_stride);
    });
  });
}

void host_topk(const TopkArgs& a) {
  per_line(a.self, a.values, a.indices, a.dim, a.k,
           [&](auto elem, auto& line, auto greater, auto less) {
             using E = decltype(elem);
             if (a.largest) select_top<E>(line, a.k, a.sorted, greater);
             else select_top<E>(line, a.k, a.sorted, less);
           });
}

void host_sort(const SortArgs& a) {
  per_line(a.self, a.values, a.indices, a.dim, -1,
           [&](auto, auto& line, auto greater, auto less) {
             auto run = [&](auto comp) {
               if (a.stable) std::stable_sort(line.begin(), line.end(), comp);
               else std::sort(line.begin(), line.end(), comp);
             };
             if (a.descending) run(greater);
             else run(less);
           });
}

AOTISHIM_REGISTER_KERNEL(ops::topk_kernel, DeviceType::CPU, host_topk);
AOTISHIM_REGISTER_KERNEL(ops::sort_kernel, DeviceType::CPU, host_sort);

}  // namespace
}  // namespace aotishim
