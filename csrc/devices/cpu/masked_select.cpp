// masked_select on the host: one pass counts the set mask elements, a second
// copies the selected elements. Elements move as raw bytes of their size, so
// every dtype is handled alike.
#include <cstring>
#include <vector>

#include "core/device.h"
#include "devices/cpu/typed_elements.h"
#include "ops/masked_select.h"

namespace aotishim {
namespace {

template <typename Unit>
void gather_selected(const MaskedSelectArgs& a, const uint8_t* mask) {
  const Unit* src = reinterpret_cast<const Unit*>(a.self.data());
  Unit* dst = reinterpret_cast<Unit*>(a.out.data());
  const std::vector<int64_t>& ss = a.self.strides;
  int64_t n = 0;
  // The mask walk carries the multi-index; self's offset follows from it.
  cpu::for_each_element(a.mask, [&](int64_t moff, const std::vector<int64_t>& index) {
    if (!mask[moff]) return;
    int64_t off = 0;
    for (size_t d = 0; d < index.size(); ++d) off += index[d] * ss[d];
    dst[n++] = src[off];
  });
}

struct Bytes16 {
  unsigned char b[16];
};

void host_masked_select(MaskedSelectArgs& a) {
  // Bool storage holds 0 or 1; any nonzero byte counts as set.
  const uint8_t* mask = cpu::typed<uint8_t>(a.mask);
  int64_t n = 0;
  cpu::for_each_element(a.mask, [&](int64_t off, const std::vector<int64_t>&) { n += mask[off] != 0; });
  a.out = make_empty(a.self.device(), a.self.dtype, {n});
  if (n == 0) return;
  switch (a.self.itemsize()) {
    case 1: return gather_selected<uint8_t>(a, mask);
    case 2: return gather_selected<uint16_t>(a, mask);
    case 4: return gather_selected<uint32_t>(a, mask);
    case 8: return gather_selected<uint64_t>(a, mask);
    case 16: return gather_selected<Bytes16>(a, mask);
  }
  fail(str("masked_select: unsupported element size ", a.self.itemsize()));
}

AOTISHIM_REGISTER_KERNEL(ops::masked_select_kernel, DeviceType::CPU, host_masked_select);

}  // namespace
}  // namespace aotishim
