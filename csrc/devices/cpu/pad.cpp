// pad on the host: every output element copied (as bytes, any dtype) from
// the input position its index maps to, in parallel over the output.
#include <cstring>
#include <vector>

#include "devices/cpu/parallel.h"
#include "ops/pad.h"

namespace aotishim {
namespace {

// The input index for output index o of a dim of `size` with `before`
// padding, or -1 outside the input (constant mode).
int64_t source_index(PadMode mode, int64_t o, int64_t before, int64_t after, int64_t size) {
  if (mode == PadMode::Circular) {  // within what the negative pads leave
    const int64_t crop_lo = before < 0 ? -before : 0, crop_hi = after < 0 ? -after : 0;
    const int64_t kept = size - crop_lo - crop_hi;
    const int64_t i = o - (before > 0 ? before : 0);
    return crop_lo + ((i % kept) + kept) % kept;
  }
  int64_t i = o - before;
  if (i >= 0 && i < size) return i;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Reflect: return i < 0 ? -i : 2 * (size - 1) - i;
    case PadMode::Replicate: return i < 0 ? 0 : size - 1;
    case PadMode::Circular: break;  // above
  }
  return -1;
}

void host_pad(const PadArgs& a) {
  const Tensor& out = a.out;
  const int64_t nd = out.dim();
  const int64_t item = static_cast<int64_t>(out.itemsize());
  // Per dim, the input offset of each output index (-1: outside).
  std::vector<std::vector<int64_t>> offsets(static_cast<size_t>(nd));
  for (int64_t d = 0; d < nd; ++d) {
    offsets[d].resize(static_cast<size_t>(out.sizes[d]));
    for (int64_t o = 0; o < out.sizes[d]; ++o) {
      const int64_t i = source_index(a.mode, o, a.before[d], a.after[d], a.self.sizes[d]);
      offsets[d][o] = i < 0 ? -1 : i * a.self.strides[d];
    }
  }
  const char* self = a.self.data();
  const char* value = a.mode == PadMode::Constant ? a.value.data() : nullptr;
  char* dst = out.data();
  cpu::parallel_for(out.numel(), 4096, [&](int64_t begin, int64_t end) {
    for (int64_t e = begin; e < end; ++e) {
      int64_t rest = e, out_off = 0, self_off = 0;
      bool inside = true;
      for (int64_t d = nd - 1; d >= 0; --d) {
        const int64_t o = rest % out.sizes[d];
        rest /= out.sizes[d];
        out_off += o * out.strides[d];
        const int64_t s = offsets[d][o];
        if (s < 0) inside = false;
        else self_off += s;
      }
      std::memcpy(dst + out_off * item, inside ? self + self_off * item : value,
                  static_cast<size_t>(item));
    }
  });
}

AOTISHIM_REGISTER_KERNEL(ops::pad_kernel, DeviceType::CPU, host_pad);

}  // namespace
}  // namespace aotishim
