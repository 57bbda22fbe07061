// cummax / cummin on the host: one scan per line, lines in parallel.
#include "devices/cpu/typed_elements.h"
#include "ops/cumulative_extrema.h"

namespace aotishim {
namespace {

void host_cumulative_extremum(const CumulativeExtremumArgs& a) {
  const int64_t n = a.self.sizes[a.dim];
  const int64_t s_stride = a.self.strides[a.dim], v_stride = a.values.strides[a.dim],
                i_stride = a.indices.strides[a.dim];
  cpu::visit_dtype(a.self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* self = cpu::typed<S>(a.self);
    S* values = cpu::typed<S>(a.values);
    int64_t* indices = cpu::typed<int64_t>(a.indices);
    cpu::for_each_line(a.self.sizes, a.dim, {&a.self.strides, &a.values.strides, &a.indices.strides},
                       n, [&](const std::vector<int64_t>& off) {
      V best = E::load(self[off[0]]);
      int64_t at = 0;
      for (int64_t i = 0; i < n; ++i) {
        const V v = E::load(self[off[0] + i * s_stride]);
        // A NaN takes over and keeps moving to the latest NaN; otherwise an
        // equal value moves the index forward.
        const bool take = cpu::is_nan(v) ||
                          (!cpu::is_nan(best) && (a.maximum ? v >= best : v <= best));
        if (take) {
          best = v;
          at = i;
        }
        values[off[1] + i * v_stride] = E::store(best);
        indices[off[2] + i * i_stride] = at;
      }
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::cumulative_extremum, DeviceType::CPU, host_cumulative_extremum);

}  // namespace
}  // namespace aotishim
