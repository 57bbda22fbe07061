// segment_reduce on the host, as torch's CPU kernel: each segment reduced in
// order in data's dtype (the half types round after every step).
#include <cmath>
#include <limits>

#include "core/error.h"
#include "devices/cpu/typed_elements.h"
#include "ops/segment_reduce.h"

namespace aotishim {
namespace {

int64_t load(const Tensor& t, int64_t i) {
  return t.dtype == DType::Int32 ? cpu::typed<int32_t>(t)[i] : cpu::typed<int64_t>(t)[i];
}

void host_segment_reduce(const SegmentReduceArgs& a) {
  const int64_t per_outer = a.offsets ? a.count + 1 : a.count;
  // Every segment's start and length, checked before anything is written.
  std::vector<int64_t> starts(static_cast<size_t>(a.outer * a.count)), lengths(starts.size());
  for (int64_t o = 0; o < a.outer; ++o) {
    int64_t at = 0;
    for (int64_t s = 0; s < a.count; ++s) {
      int64_t start = at, length = 0;
      if (a.offsets) {
        start = load(a.segments, o * per_outer + s);
        length = load(a.segments, o * per_outer + s + 1) - start;
      } else {
        length = load(a.segments, o * per_outer + s);
      }
      AOTISHIM_CHECK(length >= 0, "segment_reduce(): ", a.offsets ? "offsets" : "lengths",
                     " contains negative value!");
      AOTISHIM_CHECK(start >= 0 && start + length <= a.axis_size, "segment_reduce(): segment ",
                     s, " [", start, ", ", start + length, ") lies outside the axis of size ",
                     a.axis_size);
      starts[o * a.count + s] = start;
      lengths[o * a.count + s] = length;
      at = start + length;
    }
    AOTISHIM_CHECK(a.offsets || a.unsafe || at == a.axis_size, "segment_reduce(): Expected all rows of "
                   "lengths along axis to sum to data.size(lengths.dim()-1) when !unsafe.");
  }
  cpu::visit_dtype(a.data.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    const S* data = cpu::typed<S>(a.data);
    S* out = cpu::typed<S>(a.out);
    auto round = [](V v) { return E::load(E::store(v)); };
    for (int64_t o = 0; o < a.outer; ++o)
      for (int64_t s = 0; s < a.count; ++s)
        for (int64_t i = 0; i < a.inner; ++i) {
          V acc;
          if (a.initial) acc = round(static_cast<V>(*a.initial));
          else if (a.reduce == SegmentReduce::Max) acc = -std::numeric_limits<V>::infinity();
          else if (a.reduce == SegmentReduce::Min) acc = std::numeric_limits<V>::infinity();
          else if (a.reduce == SegmentReduce::Prod) acc = V(1);
          else acc = V(0);
          const int64_t start = starts[o * a.count + s], length = lengths[o * a.count + s];
          for (int64_t j = start; j < start + length; ++j) {
            const V x = E::load(data[(o * a.axis_size + j) * a.inner + i]);
            switch (a.reduce) {
              case SegmentReduce::Max: acc = x != x ? x : std::max(acc, x); break;
              case SegmentReduce::Min: acc = x != x ? x : std::min(acc, x); break;
              case SegmentReduce::Sum:
              case SegmentReduce::Mean: acc = round(acc + x); break;
              case SegmentReduce::Prod: acc = round(acc * x); break;
            }
          }
          if (a.reduce == SegmentReduce::Mean) {
            if (length == 0 && !a.initial) acc = std::numeric_limits<V>::quiet_NaN();
            else if (length > 0 && acc == acc) acc = acc / static_cast<V>(length);
          }
          out[(o * a.count + s) * a.inner + i] = E::store(acc);
        }
  });
}

AOTISHIM_REGISTER_KERNEL(ops::segment_reduce_kernel, DeviceType::CPU, host_segment_reduce);

}  // namespace
}  // namespace aotishim
