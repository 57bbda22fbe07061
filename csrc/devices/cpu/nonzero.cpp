// nonzero on the host: one pass counts, a second writes the indices.
#include <vector>

#include "core/device.h"
#include "devices/cpu/typed_elements.h"
#include "ops/nonzero.h"

namespace aotishim {
namespace {

// Nonzero as torch tests it: != 0 for numbers, so NaN counts and -0.0 not.
template <typename E>
bool is_set(typename E::storage s) {
  return E::load(s) != typename E::value(0);
}

void host_nonzero(NonzeroArgs& a) {
  const Tensor& self = a.self;
  const int64_t nd = self.dim();
  cpu::visit_dtype(self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    const S* data = cpu::typed<S>(self);
    int64_t n = 0;
    cpu::for_each_element(self, [&](int64_t off, const std::vector<int64_t>&) { n += is_set<E>(data[off]); });
    a.out = make_empty(self.device(), DType::Int64, {n, nd}, {1, n});
    int64_t* out = cpu::typed<int64_t>(a.out);
    int64_t row = 0;
    cpu::for_each_element(self, [&](int64_t off, const std::vector<int64_t>& index) {
      if (!is_set<E>(data[off])) return;
      for (int64_t d = 0; d < nd; ++d) out[row + d * n] = index[d];
      ++row;
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::nonzero_kernel, DeviceType::CPU, host_nonzero);

}  // namespace
}  // namespace aotishim
