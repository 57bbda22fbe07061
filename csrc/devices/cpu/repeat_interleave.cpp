// repeat_interleave(repeats) on the host: one pass checks and totals the
// repeats, a second writes the indices.
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "devices/cpu/typed_elements.h"
#include "ops/repeat_interleave.h"

namespace aotishim {
namespace {

template <typename T>
void fill(RepeatInterleaveArgs& a) {
  const T* repeats = cpu::typed<T>(a.repeats);
  const int64_t n = a.repeats.sizes[0], stride = a.repeats.strides[0];
  int64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = static_cast<int64_t>(repeats[i * stride]);
    AOTISHIM_CHECK(r >= 0, "repeats can not be negative");
    AOTISHIM_CHECK(total <= INT64_MAX - r, "repeat_interleave: the total of repeats overflows");
    total += r;
  }
  AOTISHIM_CHECK(a.output_size < 0 || a.output_size == total,
                 "allocated size does not match required size (output_size ", a.output_size,
                 ", repeats total ", total, ")");
  a.out = make_empty(a.repeats.device(), a.repeats.dtype, {total});
  T* out = cpu::typed<T>(a.out);
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = static_cast<int64_t>(repeats[i * stride]);
    for (int64_t j = 0; j < r; ++j) out[at++] = static_cast<T>(i);
  }
}

void host_repeat_interleave(RepeatInterleaveArgs& a) {
  if (a.repeats.dtype == DType::Int32) fill<int32_t>(a);
  else fill<int64_t>(a);
}

AOTISHIM_REGISTER_KERNEL(ops::repeat_interleave_kernel, DeviceType::CPU, host_repeat_interleave);

}  // namespace
}  // namespace aotishim
