// Fractional max pooling on the host, planes in parallel. The window starts
// are computed in self's dtype with a rounding after every step, as torch's
// kernel computes them (for bfloat16/float16 a start can differ from the
// exact one, and the windows must be torch's).
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/fractional_max_pool.h"

namespace aotishim {
namespace {

template <typename E>
std::vector<int64_t> window_starts(typename E::value u, int64_t in, int64_t out, int64_t k) {
  using V = typename E::value;
  auto r = [](V v) { return E::load(E::store(v)); };  // one rounding to the dtype
  std::vector<int64_t> starts(static_cast<size_t>(out), 0);
  if (out > 1) {
    const V alpha = r(r(static_cast<V>(in - k)) / r(static_cast<V>(out - 1)));
    const int64_t base = static_cast<int>(r(u * alpha));
    for (int64_t i = 0; i + 1 < out; ++i)
      starts[static_cast<size_t>(i)] = static_cast<int>(r(r(r(static_cast<V>(i)) + u) * alpha)) - base;
  }
  if (out > 0) starts[static_cast<size_t>(out - 1)] = in - k;
  return starts;
}

void host_fractional_max_pool(const FractionalPoolArgs& a) {
  const Tensor &self = a.self, &out = a.out;
  const int64_t C = self.sizes[1];
  const int64_t in[3] = {self.sizes[2], self.sizes[3], self.sizes[4]};
  const int64_t on[3] = {out.sizes[2], out.sizes[3], out.sizes[4]};
  const std::vector<int64_t> &s = self.strides, &os = out.strides, &is = a.indices.strides;
  const std::vector<int64_t>& us = a.samples.strides;
  cpu::visit_dtype(self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* src = cpu::typed<S>(self);
    const S* u = cpu::typed<S>(a.samples);
    S* dst = cpu::typed<S>(out);
    int64_t* idx = cpu::typed<int64_t>(a.indices);
    cpu::parallel_for(self.sizes[0] * C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t n = p / C, c = p % C;
        const S* row = u + n * us[0] + c * us[1];
        // which sample drives each of D, H, W: 3-D (0, 1, 2); 2-D W is 0, H 1
        std::vector<int64_t> starts[3];
        for (int i = 0; i < 3; ++i) {
          if (a.spatial == 2 && i == 0) {
            starts[0].assign(static_cast<size_t>(on[0]), 0);
            continue;
          }
          const int64_t which = a.spatial == 3 ? i : (i == 2 ? 0 : 1);
          starts[i] = window_starts<E>(E::load(row[which * us[2]]), in[i], on[i], a.pool[i]);
        }
        const S* plane = src + n * s[0] + c * s[1];
        for (int64_t od = 0; od < on[0]; ++od)
          for (int64_t oh = 0; oh < on[1]; ++oh)
            for (int64_t ow = 0; ow < on[2]; ++ow) {
              const int64_t d0 = starts[0][od], h0 = starts[1][oh], w0 = starts[2][ow];
              V best = -std::numeric_limits<V>::infinity();
              int64_t best_at = (d0 * in[1] + h0) * in[2] + w0;
              for (int64_t d = d0; d < d0 + a.pool[0]; ++d)
                for (int64_t h = h0; h < h0 + a.pool[1]; ++h)
                  for (int64_t w = w0; w < w0 + a.pool[2]; ++w) {
                    const V v = E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
                    if (v > best || cpu::is_nan(v)) {
                      best = v;
                      best_at = (d * in[1] + h) * in[2] + w;
                    }
                  }
              dst[n * os[0] + c * os[1] + od * os[2] + oh * os[3] + ow * os[4]] = E::store(best);
              idx[n * is[0] + c * is[1] + od * is[2] + oh * is[3] + ow * is[4]] = best_at;
            }
      }
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::fractional_max_pool_kernel, DeviceType::CPU,
                         host_fractional_max_pool);

}  // namespace
}  // namespace aotishim
