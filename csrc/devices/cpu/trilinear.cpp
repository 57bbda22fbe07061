// _trilinear on the host in torch's two stages (ops/trilinear.h): sums
// accumulate in float for bfloat16/float16 and in the dtype otherwise, each
// stage's result rounded to the dtype as torch's batched products round it.
#include <cstdint>
#include <vector>

#include "devices/cpu/typed_elements.h"
#include "ops/trilinear.h"

namespace aotishim {
namespace {

// Calls fn(index) for every index of `sizes` in row-major order.
template <typename Fn>
void for_each_index(const std::vector<int64_t>& sizes, const Fn& fn) {
  for (int64_t z : sizes)
    if (z == 0) return;
  std::vector<int64_t> idx(sizes.size(), 0);
  while (true) {
    fn(idx);
    int64_t d = static_cast<int64_t>(sizes.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

int64_t offset_of(const std::vector<int64_t>& idx, const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * strides[d];
  return o;
}

void host_trilinear(const TrilinearArgs& a) {
  const size_t T = a.i1.sizes.size();
  const int64_t u = a.unroll_dim;
  int64_t unroll = 1;
  for (const Tensor* t : {&a.i1, &a.i2, &a.i3}) unroll = t->sizes[u] != 1 ? t->sizes[u] : unroll;
  cpu::visit_dtype(a.out.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    auto r = [](V v) { return E::load(E::store(v)); };
    const S* p1 = cpu::typed<S>(a.i1);
    const S* p2 = cpu::typed<S>(a.i2);
    const S* p3 = cpu::typed<S>(a.i3);
    S* po = cpu::typed<S>(a.out);
    // the result, accumulated over the unrolled slices when they are summed
    std::vector<V> acc(static_cast<size_t>(a.out.numel()), V(0));
    const std::vector<int64_t> out_strides = a.out.strides;
    // stage sizes: buf over dims not in sum12 (unroll dim: one slice)
    std::vector<int64_t> bsz(T), b2sz(T), s12(T, 1), s23(T, 1);
    for (size_t i = 0; i < T; ++i) {
      const int64_t z12 = std::max(a.i1.sizes[i], a.i2.sizes[i]);
      bsz[i] = (static_cast<int64_t>(i) == u || a.sum12[i]) ? 1 : z12;
      if (a.sum12[i]) s12[i] = z12;
      const int64_t z23 = std::max(bsz[i], a.i3.sizes[i]);
      b2sz[i] = (static_cast<int64_t>(i) == u || a.sum23[i]) ? 1 : z23;
      if (a.sum23[i]) s23[i] = z23;
    }
    const std::vector<int64_t> bstrides = contiguous_strides(bsz);
    int64_t bnum = 1;
    for (int64_t z : bsz) bnum *= z;
    std::vector<V> buf(static_cast<size_t>(bnum));
    auto pick = [](const Tensor& t, const std::vector<int64_t>& idx, size_t d) {
      return t.sizes[d] == 1 ? 0 : idx[d];
    };
    for (int64_t k = 0; k < unroll; ++k) {
      for_each_index(bsz, [&](const std::vector<int64_t>& bi) {
        V sum = 0;
        std::vector<int64_t> full = bi;
        full[u] = k;
        for_each_index(s12, [&](const std::vector<int64_t>& si) {
          int64_t o1 = 0, o2 = 0;
          for (size_t d = 0; d < T; ++d) {
            std::vector<int64_t>& f = full;
            if (a.sum12[d]) f[d] = si[d];
            o1 += pick(a.i1, f, d) * a.i1.strides[d];
            o2 += pick(a.i2, f, d) * a.i2.strides[d];
          }
          sum += E::load(p1[o1]) * E::load(p2[o2]);
        });
        buf[offset_of(bi, bstrides)] = r(sum);
      });
      for_each_index(b2sz, [&](const std::vector<int64_t>& ci) {
        V sum = 0;
        std::vector<int64_t> full = ci;
        full[u] = k;
        for_each_index(s23, [&](const std::vector<int64_t>& si) {
          int64_t ob = 0, o3 = 0;
          for (size_t d = 0; d < T; ++d) {
            if (a.sum23[d]) full[d] = si[d];
            const int64_t bd = (static_cast<int64_t>(d) == u || bsz[d] == 1) ? 0 : full[d];
            ob += bd * bstrides[d];
            o3 += pick(a.i3, full, d) * a.i3.strides[d];
          }
          sum += buf[ob] * E::load(p3[o3]);
        });
        std::vector<int64_t> oi = ci;
        oi[u] = a.unroll_summed ? 0 : k;
        V& slot = acc[offset_of(oi, out_strides)];
        slot = r(slot + r(sum));
      });
    }
    for (size_t i = 0; i < acc.size(); ++i) po[i] = E::store(acc[i]);
  });
}

AOTISHIM_REGISTER_KERNEL(ops::trilinear_kernel, DeviceType::CPU, host_trilinear);

}  // namespace
}  // namespace aotishim
