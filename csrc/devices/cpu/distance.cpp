// cdist / pdist on the host, output elements in parallel, in the dtype
// (float32 or float64) as torch's CPU kernels accumulate: a running sum (or
// max) over the columns, then the root.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/distance.h"

namespace aotishim {
namespace {

template <typename T>
T distance(const T* a, int64_t sa, const T* b, int64_t sb, int64_t m, double p) {
  T agg = 0;
  if (p == 0) {
    for (int64_t k = 0; k < m; ++k) agg += (a[k * sa] - b[k * sb]) != T(0) ? T(1) : T(0);
    return agg;
  }
  if (p == 1) {
    for (int64_t k = 0; k < m; ++k) agg += std::abs(a[k * sa] - b[k * sb]);
    return agg;
  }
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      const T d = a[k * sa] - b[k * sb];
      agg += d * d;
    }
    return std::sqrt(agg);
  }
  if (std::isinf(p)) {
    for (int64_t k = 0; k < m; ++k) {
      const T d = std::abs(a[k * sa] - b[k * sb]);
      if (std::isnan(d) || std::isnan(agg)) agg = std::numeric_limits<T>::quiet_NaN();
      else if (d > agg) agg = d;
    }
    return agg;
  }
  const T tp = static_cast<T>(p);
  for (int64_t k = 0; k < m; ++k) agg += std::pow(std::abs(a[k * sa] - b[k * sb]), tp);
  return std::pow(agg, T(1) / tp);
}

template <typename T>
void pdist(const DistanceArgs& a) {
  const Tensor& x = a.x1;
  const int64_t n = x.sizes[0], m = x.sizes[1];
  const int64_t rs = x.strides[0], cs = x.strides[1];
  const T* data = cpu::typed<T>(x);
  T* dst = cpu::typed<T>(a.out);
  cpu::parallel_for(n, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      // pairs (i, j > i) start at i * n - i * (i + 1) / 2
      int64_t at = i * n - i * (i + 1) / 2;
      for (int64_t j = i + 1; j < n; ++j, ++at)
        dst[at] = distance(data + i * rs, cs, data + j * rs, cs, m, a.p);
    }
  });
}

template <typename T>
void cdist(const DistanceArgs& a) {
  const Tensor &x1 = a.x1, &x2 = a.x2;
  const int64_t nb = x1.dim() - 2;
  const int64_t r1 = x1.sizes[nb], r2 = x2.sizes[nb], m = x1.sizes[nb + 1];
  int64_t batches = 1;
  for (int64_t i = 0; i < nb; ++i) batches *= x1.sizes[i];
  const T* d1 = cpu::typed<T>(x1);
  const T* d2 = cpu::typed<T>(x2);
  T* dst = cpu::typed<T>(a.out);
  const int64_t rs1 = x1.strides[nb], cs1 = x1.strides[nb + 1];
  const int64_t rs2 = x2.strides[nb], cs2 = x2.strides[nb + 1];
  cpu::parallel_for(batches * r1, std::max<int64_t>(1, 4096 / std::max<int64_t>(r2 * m, 1)),
                    [&](int64_t begin, int64_t end) {
    std::vector<T> norms2;
    int64_t norms_batch = -1;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t b = row / r1, i = row % r1;
      int64_t o1 = 0, o2 = 0;
      for (int64_t d = nb - 1, rest = b; d >= 0; --d) {
        const int64_t k = rest % x1.sizes[d];
        rest /= x1.sizes[d];
        o1 += k * x1.strides[d];
        o2 += k * x2.strides[d];
      }
      const T* a_row = d1 + o1 + i * rs1;
      T* out = dst + row * r2;
      if (!a.euclid_mm) {
        for (int64_t j = 0; j < r2; ++j) out[j] = distance(a_row, cs1, d2 + o2 + j * rs2, cs2, m, a.p);
        continue;
      }
      // |a|^2 - 2 a.b + |b|^2 as torch's matrix product forms it
      if (norms_batch != b) {
        norms2.assign(static_cast<size_t>(r2), T(0));
        for (int64_t j = 0; j < r2; ++j)
          for (int64_t k = 0; k < m; ++k) {
            const T v = d2[o2 + j * rs2 + k * cs2];
            norms2[j] += v * v;
          }
        norms_batch = b;
      }
      T n1 = 0;
      for (int64_t k = 0; k < m; ++k) n1 += a_row[k * cs1] * a_row[k * cs1];
      for (int64_t j = 0; j < r2; ++j) {
        const T* b_row = d2 + o2 + j * rs2;
        T dot = 0;
        for (int64_t k = 0; k < m; ++k) dot += (T(-2) * a_row[k * cs1]) * b_row[k * cs2];
        const T sq = dot + n1 + norms2[j];
        out[j] = std::sqrt(std::max(sq, T(0)));  // a NaN stays NaN
      }
    }
  });
}

void host_distance(const DistanceArgs& a) {
  if (a.x1.dtype == DType::Float64) {
    if (a.pairwise) pdist<double>(a); else cdist<double>(a);
  } else {
    if (a.pairwise) pdist<float>(a); else cdist<float>(a);
  }
}

AOTISHIM_REGISTER_KERNEL(ops::distance_kernel, DeviceType::CPU, host_distance);

}  // namespace
}  // namespace aotishim
