// kthvalue / median / nanmedian / mode on the host, line by line (lines in
// parallel). Numbers order as torch orders them for these ops: NaN above
// every number. A line is copied as (value, index) pairs, then selected
// (std::nth_element) or sorted and scanned for runs (mode).
#include <algorithm>
#include <utility>
#include <vector>

#include "devices/cpu/typed_elements.h"
#include "ops/order_statistics.h"

namespace aotishim {
namespace {

template <typename V>
using Pair = std::pair<V, int64_t>;

// a before b in ascending order, NaN last; equal values by index (mode's
// runs then end at the last index of each value).
template <typename V>
bool ascending(const Pair<V>& a, const Pair<V>& b) {
  const bool an = cpu::is_nan(a.first), bn = cpu::is_nan(b.first);
  if (an || bn) return !an || (bn && a.second < b.second);
  return a.first < b.first || (a.first == b.first && a.second < b.second);
}

template <typename V>
bool same_value(V a, V b) {
  return a == b || (cpu::is_nan(a) && cpu::is_nan(b));
}

// The selected (value, index) of one line (modified in place).
template <typename V>
Pair<V> select_line(std::vector<Pair<V>>& line, SelectKind kind, int64_t k) {
  const auto nth = [&](int64_t i) {
    std::nth_element(line.begin(), line.begin() + i, line.end(), ascending<V>);
    return line[static_cast<size_t>(i)];
  };
  const int64_t n = static_cast<int64_t>(line.size());
  switch (kind) {
    case SelectKind::Kth:
      return nth(k - 1);
    case SelectKind::Median: {
      for (const Pair<V>& p : line)
        if (cpu::is_nan(p.first)) return p;  // torch: NaN propagates
      return nth((n - 1) / 2);
    }
    case SelectKind::NanMedian: {
      const int64_t numbers = std::count_if(line.begin(), line.end(),
                                            [](const Pair<V>& p) { return !cpu::is_nan(p.first); });
      return nth(numbers == 0 ? 0 : (numbers - 1) / 2);  // all NaN: a NaN
    }
    case SelectKind::Mode: {
      std::sort(line.begin(), line.end(), ascending<V>);
      Pair<V> best = line[0];
      int64_t best_count = 0, run = 0;
      for (int64_t i = 0; i < n; ++i) {
        ++run;
        if (i + 1 == n || !same_value(line[i].first, line[i + 1].first)) {
          if (run > best_count) {  // strictly more: the smaller value wins ties
            best = line[i];
            best_count = run;
          }
          run = 0;
        }
      }
      return best;
    }
  }
  return line[0];
}

void host_select(const SelectArgs& a) {
  cpu::visit_dtype(a.self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* self = cpu::typed<S>(a.self);
    S* values = cpu::typed<S>(a.values);
    if (a.dim < 0) {  // all of self: one line, in row-major order
      std::vector<Pair<V>> line;
      line.reserve(static_cast<size_t>(a.self.numel()));
      cpu::for_each_element(a.self, [&](int64_t off, const std::vector<int64_t>&) {
        line.emplace_back(E::load(self[off]), static_cast<int64_t>(line.size()));
      });
      values[0] = E::store(select_line(line, a.kind, a.k).first);
      return;
    }
    int64_t* indices = cpu::typed<int64_t>(a.indices);
    const int64_t n = a.self.dim() == 0 ? 1 : a.self.sizes[a.dim];
    const int64_t stride = a.self.dim() == 0 ? 1 : a.self.strides[a.dim];
    cpu::for_each_line(a.self.sizes, a.dim, {&a.self.strides, &a.values.strides, &a.indices.strides},
                       n, [&](const std::vector<int64_t>& off) {
      std::vector<Pair<V>> line(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) line[i] = {E::load(self[off[0] + i * stride]), i};
      const Pair<V> picked = select_line(line, a.kind, a.k);
      values[off[1]] = E::store(picked.first);
      indices[off[2]] = picked.second;
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::select_kernel, DeviceType::CPU, host_select);

}  // namespace
}  // namespace aotishim
