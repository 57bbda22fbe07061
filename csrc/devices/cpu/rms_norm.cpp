// _fused_rms_norm on the host: one row at a time (rows in parallel), the
// sum of squares accumulated in float64, rstd and the product in the compute
// type (float32, or float64 for float64 input), rounded once into out.
#include <cmath>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/rms_norm.h"

namespace aotishim {
namespace {

// Element offsets of a tensor's elements in row-major order.
std::vector<int64_t> element_offsets(const Tensor& t) {
  std::vector<int64_t> offsets;
  offsets.reserve(static_cast<size_t>(t.numel()));
  cpu::for_each_element(t, [&](int64_t off, const std::vector<int64_t>&) { offsets.push_back(off); });
  return offsets;
}

template <typename C>
void run_rows(const RmsNormArgs& a) {
  const int64_t n = a.n, rows = a.rstd.numel();
  const std::vector<int64_t> in_offsets = element_offsets(a.input);
  std::vector<C> weight;
  if (a.weight) {
    weight.reserve(static_cast<size_t>(n));
    cpu::visit_dtype(a.weight->dtype, [&](auto elem) {
      using E = decltype(elem);
      const typename E::storage* w = cpu::typed<typename E::storage>(*a.weight);
      cpu::for_each_element(*a.weight, [&](int64_t off, const std::vector<int64_t>&) {
        weight.push_back(static_cast<C>(E::load(w[off])));
      });
    });
  }
  C* rstd = cpu::typed<C>(a.rstd);
  cpu::visit_dtype(a.input.dtype, [&](auto elem) {
    using E = decltype(elem);
    const typename E::storage* in = cpu::typed<typename E::storage>(a.input);
    typename E::storage* out = cpu::typed<typename E::storage>(a.out);
    cpu::parallel_for(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
                      [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t* offs = in_offsets.data() + r * n;
        double squares = 0.0;
        for (int64_t i = 0; i < n; ++i) {
          const double x = static_cast<double>(E::load(in[offs[i]]));
          squares += x * x;
        }
        const C mean = static_cast<C>(squares / static_cast<double>(n));
        const C s = C(1) / std::sqrt(mean + static_cast<C>(a.eps));
        rstd[r] = s;
        for (int64_t i = 0; i < n; ++i) {
          C y = static_cast<C>(E::load(in[offs[i]])) * s;
          if (!weight.empty()) y *= weight[static_cast<size_t>(i)];
          out[r * n + i] = E::store(static_cast<typename E::value>(y));
        }
      }
    });
  });
}

void host_fused_rms_norm(const RmsNormArgs& a) {
  if (a.input.dtype == DType::Float64)
    run_rows<double>(a);
  else
    run_rows<float>(a);
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::fused_rms_norm_kernel, DeviceType::CPU, host_fused_rms_norm);

}  // namespace aotishim
