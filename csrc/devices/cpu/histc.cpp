// histc on the host, binning as torch's CPU kernel does: the range's ends
// rounded to self's dtype, and each element's bin the integer part of
// (x - min) * bins / (max - min) computed in self's dtype (every operation
// rounded to it), max itself in the last bin. So elements near a bin's edge
// land where torch puts them, in bfloat16 too. Counts are exact integers
// rounded once into out's dtype (torch sums them in the dtype: beyond 256 in
// one bfloat16 bin, 2048 in one float16 bin, the two can differ).
#include <algorithm>
#include <cmath>
#include <vector>

#include "devices/cpu/typed_elements.h"
#include "ops/histc.h"

namespace aotishim {
namespace {

template <typename E>
void histc_typed(const HistcArgs& a) {
  using S = typename E::storage;
  using V = typename E::value;
  const auto in_dtype = [](V v) { return E::load(E::store(v)); };  // rounded to self's dtype
  const S* self = cpu::typed<S>(a.self);

  double lo = a.min, hi = a.max;
  if (lo == hi && a.self.numel() > 0) {  // the data's own range
    bool first = true;
    cpu::for_each_element(a.self, [&](int64_t off, const std::vector<int64_t>&) {
      const double x = static_cast<double>(E::load(self[off]));
      if (first || std::isnan(x)) {
        lo = hi = x;
        first = false;
      } else if (!std::isnan(lo)) {
        lo = std::min(lo, x);
        hi = std::max(hi, x);
      }
    });
  }
  if (lo == hi) {
    lo -= 1;
    hi += 1;
  }
  AOTISHIM_CHECK(std::isfinite(lo) && std::isfinite(hi), "histc: range of [", lo, ", ", hi,
                 "] is not finite");
  AOTISHIM_CHECK(lo < hi, "histc: max must be larger than min");

  const V left = in_dtype(static_cast<V>(lo)), right = in_dtype(static_cast<V>(hi));
  const V width = in_dtype(right - left), scale = in_dtype(static_cast<V>(a.bins));
  std::vector<int64_t> counts(static_cast<size_t>(a.bins), 0);
  cpu::for_each_element(a.self, [&](int64_t off, const std::vector<int64_t>&) {
    const V x = E::load(self[off]);
    if (!(x >= left && x <= right)) return;  // outside, or NaN
    const V position = in_dtype(in_dtype(in_dtype(x - left) * scale) / width);
    const int64_t bin = std::min<int64_t>(static_cast<int64_t>(position), a.bins - 1);
    counts[std::max<int64_t>(bin, 0)] += 1;
  });
  S* out = cpu::typed<S>(a.out);
  for (int64_t i = 0; i < a.bins; ++i) out[i * a.out.strides[0]] = E::store(static_cast<V>(counts[i]));
}

void host_histc(const HistcArgs& a) {
  switch (a.self.dtype) {
    case DType::Float32: return histc_typed<cpu::Plain<float>>(a);
    case DType::Float64: return histc_typed<cpu::Plain<double>>(a);
    case DType::BFloat16: return histc_typed<cpu::BFloat16Elem>(a);
    case DType::Float16: return histc_typed<cpu::Float16Elem>(a);
    default:
      fail(str("histc: unsupported dtype ", dtype_name(a.self.dtype),
               " on the cpu (float32, float64, bfloat16, float16)"));
  }
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::histc_kernel, DeviceType::CPU, host_histc);

}  // namespace aotishim
