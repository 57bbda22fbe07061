// Windowed average / max pooling on the host, planes in parallel, as torch's
// CPU kernels compute them: window sums accumulate in float for
// bfloat16/float16 and in the dtype itself otherwise, a max compares in that
// type with NaN winning.
#include <algorithm>
#include <cmath>
#include <limits>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/pooling.h"

namespace aotishim {
namespace {

void host_pool(const PoolArgs& a) {
  const Tensor &self = a.self, &out = a.out;
  const int64_t C = self.sizes[1];
  const int64_t in[3] = {self.sizes[2], self.sizes[3], self.sizes[4]};
  const int64_t on[3] = {out.sizes[2], out.sizes[3], out.sizes[4]};
  const std::vector<int64_t> &s = self.strides, &os = out.strides;
  const int64_t planes = self.sizes[0] * C;
  const int64_t cells = on[0] * on[1] * on[2];
  const int64_t window = a.kernel[0] * a.kernel[1] * a.kernel[2];
  cpu::visit_dtype(self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* src = cpu::typed<S>(self);
    S* dst = cpu::typed<S>(out);
    int64_t* idx = a.max ? cpu::typed<int64_t>(a.indices) : nullptr;
    const std::vector<int64_t>* is = a.max ? &a.indices.strides : nullptr;
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(cells * window, 1));
    cpu::parallel_for(planes, grain, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t n = p / C, c = p % C;
        const S* plane = src + n * s[0] + c * s[1];
        for (int64_t od = 0; od < on[0]; ++od)
          for (int64_t oh = 0; oh < on[1]; ++oh)
            for (int64_t ow = 0; ow < on[2]; ++ow) {
              const int64_t o[3] = {od, oh, ow};
              const int64_t at = n * os[0] + c * os[1] + od * os[2] + oh * os[3] + ow * os[4];
              int64_t lo[3], hi[3];
              if (a.max) {
                for (int i = 0; i < 3; ++i) {
                  lo[i] = o[i] * a.stride[i] - a.padding[i];
                  hi[i] = std::min(lo[i] + (a.kernel[i] - 1) * a.dilation[i] + 1, in[i]);
                  while (lo[i] < 0) lo[i] += a.dilation[i];
                }
                V best = -std::numeric_limits<V>::infinity();
                int64_t best_at = (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
                for (int64_t d = lo[0]; d < hi[0]; d += a.dilation[0])
                  for (int64_t h = lo[1]; h < hi[1]; h += a.dilation[1])
                    for (int64_t w = lo[2]; w < hi[2]; w += a.dilation[2]) {
                      const V v = E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
                      if (v > best || cpu::is_nan(v)) {
                        best = v;
                        best_at = (d * in[1] + h) * in[2] + w;
                      }
                    }
                dst[at] = E::store(best);
                idx[n * (*is)[0] + c * (*is)[1] + od * (*is)[2] + oh * (*is)[3] + ow * (*is)[4]] =
                    best_at;
              } else {
                int64_t padded = 1, inside = 1;
                for (int i = 0; i < 3; ++i) {
                  lo[i] = o[i] * a.stride[i] - a.padding[i];
                  hi[i] = std::min(lo[i] + a.kernel[i], in[i] + a.padding[i]);
                  padded *= hi[i] - lo[i];
                  lo[i] = std::max<int64_t>(lo[i], 0);
                  hi[i] = std::min(hi[i], in[i]);
                  inside *= std::max<int64_t>(hi[i] - lo[i], 0);
                }
                if (inside == 0) {
                  dst[at] = E::store(V(0));
                  continue;
                }
                const int64_t divisor = a.divisor_override != 0 ? a.divisor_override
                                        : a.count_include_pad   ? padded
                                                                : inside;
                V sum = 0;
                for (int64_t d = lo[0]; d < hi[0]; ++d)
                  for (int64_t h = lo[1]; h < hi[1]; ++h)
                    for (int64_t w = lo[2]; w < hi[2]; ++w)
                      sum += E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
                dst[at] = E::store(sum / static_cast<V>(divisor));
              }
            }
      }
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::pool_kernel, DeviceType::CPU, host_pool);

}  // namespace
}  // namespace aotishim
