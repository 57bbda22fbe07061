// Adaptive average / max pooling on the host (2-D and 3-D, as 5-D views),
// planes in parallel.
// Averages accumulate in float for bfloat16/float16 and in the dtype itself
// otherwise (torch's CPU accumulation types).
#include <cmath>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/adaptive_pool.h"

namespace aotishim {
namespace {

int64_t window_start(int64_t o, int64_t in, int64_t out) { return (o * in) / out; }
int64_t window_end(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

void host_adaptive_pool(const AdaptivePoolArgs& a) {
  const Tensor &self = a.self, &out = a.out;
  const int64_t N = self.sizes[0], C = self.sizes[1];
  const int64_t D = self.sizes[2], H = self.sizes[3], W = self.sizes[4];
  const int64_t oD = out.sizes[2], oH = out.sizes[3], oW = out.sizes[4];
  const std::vector<int64_t>& s = self.strides;
  const std::vector<int64_t>& os = out.strides;
  const std::vector<int64_t>* is = a.max ? &a.indices.strides : nullptr;
  cpu::visit_dtype(self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* in = cpu::typed<S>(self);
    S* dst = cpu::typed<S>(out);
    int64_t* idx = a.max ? cpu::typed<int64_t>(a.indices) : nullptr;
    cpu::parallel_for(N * C, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t n = p / C, c = p % C;
        const S* plane = in + n * s[0] + c * s[1];
        for (int64_t od = 0; od < oD; ++od) {
          const int64_t d0 = window_start(od, D, oD), d1 = window_end(od, D, oD);
          for (int64_t oh = 0; oh < oH; ++oh) {
            const int64_t h0 = window_start(oh, H, oH), h1 = window_end(oh, H, oH);
            for (int64_t ow = 0; ow < oW; ++ow) {
              const int64_t o = n * os[0] + c * os[1] + od * os[2] + oh * os[3] + ow * os[4];
              const int64_t w0 = window_start(ow, W, oW), w1 = window_end(ow, W, oW);
              if (a.max) {
                V best = E::load(plane[d0 * s[2] + h0 * s[3] + w0 * s[4]]);
                int64_t at = (d0 * H + h0) * W + w0;
                for (int64_t d = d0; d < d1; ++d)
                  for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w) {
                      const V v = E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
                      if (v > best || cpu::is_nan(v)) {
                        best = v;
                        at = (d * H + h) * W + w;
                      }
                    }
                dst[o] = E::store(best);
                idx[n * (*is)[0] + c * (*is)[1] + od * (*is)[2] + oh * (*is)[3] + ow * (*is)[4]] = at;
              } else {
                V sum = 0;
                for (int64_t d = d0; d < d1; ++d)
                  for (int64_t h = h0; h < h1; ++h)
                    for (int64_t w = w0; w < w1; ++w) sum += E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
                // as torch's kernels divide (ops/adaptive_pool.h)
                dst[o] = E::store(a.divide_once
                                      ? sum / static_cast<V>((d1 - d0) * (h1 - h0) * (w1 - w0))
                                      : sum / static_cast<V>(d1 - d0) / static_cast<V>(h1 - h0) /
                                            static_cast<V>(w1 - w0));
              }
            }
          }
        }
      }
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::adaptive_pool_kernel, DeviceType::CPU, host_adaptive_pool);

}  // namespace
}  // namespace aotishim
