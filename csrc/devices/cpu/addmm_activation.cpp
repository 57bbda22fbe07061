// _addmm_activation's epilogue on the host: relu or the exact gelu,
// 0.5 x (1 + erf(x / sqrt(2))), over the contiguous result in place.
#include <cmath>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/addmm_activation.h"

namespace aotishim {
namespace {

template <typename V>
V activate(V x, bool gelu) {
  if (!gelu) return x > V(0) ? x : (x != x ? x : V(0));  // NaN stays NaN, as torch's relu
  return V(0.5) * x * (V(1) + std::erf(x * V(M_SQRT1_2)));
}

void host_activation(const ActivationArgs& a) {
  cpu::visit_dtype(a.out.dtype, [&](auto elem) {
    using E = decltype(elem);
    using V = typename E::value;
    typename E::storage* data = cpu::typed<typename E::storage>(a.out);
    cpu::parallel_for(a.out.numel(), 4096, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) data[i] = E::store(activate<V>(E::load(data[i]), a.gelu));
    });
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::addmm_activation_epilogue, DeviceType::CPU, host_activation);

}  // namespace aotishim
