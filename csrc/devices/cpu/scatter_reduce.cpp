// scatter_reduce (and scatter's plain write) on the host, serially in index order (the order torch's CPU
// kernel accumulates in, so float sums round the same way).
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "devices/cpu/typed_elements.h"
#include "ops/scatter_reduce.h"

namespace aotishim {
namespace {

// Calls fn(index offset, src offset, position) over index's elements in
// row-major order.
template <typename Fn>
void walk_index(const ScatterReduceArgs& a, const Fn& fn) {
  const Tensor& index = a.index;
  const int64_t nd = index.dim(), numel = index.numel();
  std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
  int64_t ioff = 0, soff = 0;
  for (int64_t i = 0; i < numel; ++i) {
    fn(ioff, soff, pos);
    for (int64_t d = nd - 1; d >= 0; --d) {
      ioff += index.strides[d];
      soff += a.src.strides[d];
      if (++pos[d] < index.sizes[d]) break;
      ioff -= index.strides[d] * index.sizes[d];
      soff -= a.src.strides[d] * index.sizes[d];
      pos[d] = 0;
    }
  }
}

template <typename I>
void run_typed_index(const ScatterReduceArgs& a) {
  const I* index = cpu::typed<I>(a.index);
  const int64_t limit = a.out.dim() == 0 ? 1 : a.out.sizes[a.dim];
  // Every index is checked before anything is written: an error leaves out as self.
  walk_index(a, [&](int64_t ioff, int64_t, const std::vector<int64_t>&) {
    const int64_t i = static_cast<int64_t>(index[ioff]);
    AOTISHIM_CHECK(i >= 0 && i < limit, "index ", i, " is out of bounds for dimension ",
                   a.dim, " with size ", limit);
  });
  // Row-major flat position in out of `pos` with dim replaced by its
  // (checked) index: the slot in the working copy below.
  const std::vector<int64_t> flat_strides = contiguous_strides(a.out.sizes);
  auto target = [&](const std::vector<int64_t>& pos, int64_t ioff) {
    const int64_t i = static_cast<int64_t>(index[ioff]);
    int64_t flat = 0;
    for (int64_t d = 0; d < a.out.dim(); ++d) flat += (d == a.dim ? i : pos[d]) * flat_strides[d];
    return flat;
  };

  cpu::visit_dtype(a.out.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* src = cpu::typed<S>(a.src);
    // A working copy of out in the compute type: 16-bit floats accumulate in
    // float and are rounded once at the end, as torch's kernel does.
    std::vector<V> acc(static_cast<size_t>(a.out.numel()));
    S* out = cpu::typed<S>(a.out);
    {
      size_t i = 0;
      cpu::for_each_element(a.out, [&](int64_t off, const std::vector<int64_t>&) { acc[i++] = E::load(out[off]); });
    }
    constexpr bool floating = std::numeric_limits<V>::has_infinity;
    const V lowest = floating ? -std::numeric_limits<V>::infinity() : std::numeric_limits<V>::lowest();
    const V highest = floating ? std::numeric_limits<V>::infinity() : std::numeric_limits<V>::max();

    if (!a.include_self) {
      V identity = V(0);
      if (a.reduce == ScatterReduce::Prod) identity = V(1);
      if (a.reduce == ScatterReduce::Amax) identity = lowest;
      if (a.reduce == ScatterReduce::Amin) identity = highest;
      walk_index(a, [&](int64_t ioff, int64_t, const std::vector<int64_t>& pos) {
        acc[target(pos, ioff)] = identity;
      });
    }
    const bool mean = a.reduce == ScatterReduce::Mean;
    std::vector<int64_t> counts;  // mean: how many values each element of out sums
    if (mean) counts.assign(acc.size(), a.include_self ? 1 : 0);

    walk_index(a, [&](int64_t ioff, int64_t soff, const std::vector<int64_t>& pos) {
      const int64_t t = target(pos, ioff);
      V& cur = acc[t];
      const V v = E::load(src[soff]);
      switch (a.reduce) {
        case ScatterReduce::Sum:
        case ScatterReduce::Mean: cur = cur + v; break;
        case ScatterReduce::Prod: cur = cur * v; break;
        case ScatterReduce::Amax:
          cur = cpu::is_nan(v) ? v : cpu::is_nan(cur) ? cur : (v > cur ? v : cur);
          break;
        case ScatterReduce::Amin:
          cur = cpu::is_nan(v) ? v : cpu::is_nan(cur) ? cur : (v < cur ? v : cur);
          break;
        case ScatterReduce::Assign: cur = v; break;
      }
      if (mean) ++counts[t];
    });

    size_t i = 0;
    cpu::for_each_element(a.out, [&](int64_t off, const std::vector<int64_t>&) {
      S stored = E::store(acc[i]);
      // Mean divides the stored (rounded) sum, as torch divides out afterwards.
      const int64_t c = mean && counts[i] > 1 ? counts[i] : 1;
      if (c != 1) {
        const V x = E::load(stored);
        if constexpr (floating) {
          stored = E::store(x / static_cast<V>(c));
        } else {  // floor division, as torch's integer mean
          V q = static_cast<V>(x / static_cast<V>(c));
          if (x % static_cast<V>(c) != 0 && x < 0) q = static_cast<V>(q - 1);
          stored = E::store(q);
        }
      }
      out[off] = stored;
      ++i;
    });
  });
}

void host_scatter_reduce(const ScatterReduceArgs& a) {
  if (a.index.dtype == DType::Int32) run_typed_index<int32_t>(a);
  else run_typed_index<int64_t>(a);
}

AOTISHIM_REGISTER_KERNEL(ops::scatter_reduce_kernel, DeviceType::CPU, host_scatter_reduce);

}  // namespace
}  // namespace aotishim
