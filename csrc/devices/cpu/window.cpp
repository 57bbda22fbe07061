// hann_window on the host, in the dtype torch computes it in.
#include <cmath>

#include "devices/cpu/typed_elements.h"
#include "ops/window.h"

namespace aotishim {
namespace {

void host_hann_window(const WindowArgs& a) {
  cpu::visit_dtype(a.out.dtype, [&](auto elem) {
    using E = decltype(elem);
    using V = typename E::value;
    // torch: arange in the dtype, times the step (a double scalar cast to the
    // dtype), cos, times -0.5 plus 0.5. The half types hold each step.
    const double step = 2.0 * 3.14159265358979323846 / static_cast<double>(a.n - 1);
    const V step_v = E::load(E::store(static_cast<V>(step)));
    typename E::storage* out = cpu::typed<typename E::storage>(a.out);
    for (int64_t i = 0; i < a.out.sizes[0]; ++i) {
      const V x = E::load(E::store(static_cast<V>(i)));
      const V angle = E::load(E::store(x * step_v));
      const V c = E::load(E::store(std::cos(angle)));
      const V scaled = E::load(E::store(c * V(-0.5)));
      out[i * a.out.strides[0]] = E::store(scaled + V(0.5));
    }
  });
}

AOTISHIM_REGISTER_KERNEL(ops::hann_window_kernel, DeviceType::CPU, host_hann_window);

}  // namespace
}  // namespace aotishim
