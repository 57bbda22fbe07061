// Max unpooling on the host, planes in parallel: each plane zeroed, then
// written in self's element order. A bad index is reported after the loop
// (nothing may be thrown inside a parallel region).
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/max_unpool.h"

namespace aotishim {
namespace {

void host_max_unpool(const UnpoolArgs& a) {
  const Tensor &self = a.self, &out = a.out;
  const int64_t C = self.sizes[1];
  const int64_t D = self.sizes[2], H = self.sizes[3], W = self.sizes[4];
  const int64_t oD = out.sizes[2], oH = out.sizes[3], oW = out.sizes[4];
  const int64_t plane_size = oD * oH * oW;
  const std::vector<int64_t> &s = self.strides, &is = a.indices.strides, &os = out.strides;
  const int64_t planes = self.sizes[0] * C;
  // the bad index of the first plane that has one
  std::vector<int64_t> bad(static_cast<size_t>(planes), 0);
  std::vector<char> has_bad(static_cast<size_t>(planes), 0);
  cpu::visit_dtype(self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    const S* src = cpu::typed<S>(self);
    const int64_t* idx = cpu::typed<int64_t>(a.indices);
    S* dst = cpu::typed<S>(out);
    cpu::parallel_for(planes, 1, [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const int64_t n = p / C, c = p % C;
        S* plane = dst + n * os[0] + c * os[1];
        for (int64_t d = 0; d < oD; ++d)
          for (int64_t h = 0; h < oH; ++h)
            for (int64_t w = 0; w < oW; ++w) plane[d * os[2] + h * os[3] + w * os[4]] = E::store(0);
        const S* in = src + n * s[0] + c * s[1];
        const int64_t* ip = idx + n * is[0] + c * is[1];
        for (int64_t d = 0; d < D; ++d)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t w = 0; w < W; ++w) {
              const int64_t at = ip[d * is[2] + h * is[3] + w * is[4]];
              if (at < 0 || at >= plane_size) {
                if (!has_bad[p]) {
                  has_bad[p] = 1;
                  bad[p] = at;
                }
                continue;
              }
              const int64_t od = at / (oH * oW), oh = (at / oW) % oH, ow = at % oW;
              plane[od * os[2] + oh * os[3] + ow * os[4]] = in[d * s[2] + h * s[3] + w * s[4]];
            }
      }
    });
  });
  for (int64_t p = 0; p < planes; ++p) {
    if (!has_bad[p]) continue;
    if (a.spatial == 2)
      fail(str("Found an invalid max index: ", bad[p], " (output volumes are of size ", oH, "x",
               oW, ")"));
    fail(str("Found an invalid max index: ", bad[p], " (output volumes are of size ", oD, "x", oH,
             "x", oW, ")"));
  }
}

AOTISHIM_REGISTER_KERNEL(ops::max_unpool_kernel, DeviceType::CPU, host_max_unpool);

}  // namespace
}  // namespace aotishim
