// histogram on the host, as torch's CPU kernel computes it in the input's
// dtype: the outer edges, linspace edges (from the left edge in the first
// half, from the right edge in the second), each point's bin by linear
// interpolation corrected by a search of the neighbouring edges, then the
// counts (or weights) summed in point order.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "devices/cpu/typed_elements.h"
#include "ops/histogram.h"

namespace aotishim {
namespace {

template <typename T>
void run(const HistogramArgs& a) {
  const int64_t D = static_cast<int64_t>(a.bins.size());
  // The points' coordinates packed row-major, then the weights.
  std::vector<T> points(static_cast<size_t>(a.self.numel()));
  {
    const T* src = cpu::typed<T>(a.self);
    size_t i = 0;
    cpu::for_each_element(a.self, [&](int64_t off, const std::vector<int64_t>&) { points[i++] = src[off]; });
  }
  const int64_t M = D > 0 ? static_cast<int64_t>(points.size()) / D : 0;
  std::vector<T> weights;
  if (a.weight.storage) {
    const T* src = cpu::typed<T>(a.weight);
    cpu::for_each_element(a.weight, [&](int64_t off, const std::vector<int64_t>&) { weights.push_back(src[off]); });
  }
  std::vector<std::vector<T>> edges(static_cast<size_t>(D));
  for (int64_t d = 0; d < D; ++d) {
    double lo = 0, hi = 1;  // torch's range without points
    if (!a.range.empty()) {
      lo = a.range[2 * d];
      hi = a.range[2 * d + 1];
    } else if (M > 0) {
      T mn = points[d], mx = points[d];
      for (int64_t i = 0; i < M; ++i) {
        const T v = points[i * D + d];
        if (v != v) { mn = mx = v; break; }  // NaN: the range is not finite
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
      lo = static_cast<double>(mn);
      hi = static_cast<double>(mx);
    }
    AOTISHIM_CHECK(std::isfinite(lo) && std::isfinite(hi), "torch.histogramdd: dimension ", d,
                   "'s range [", lo, ", ", hi, "] is not finite");
    AOTISHIM_CHECK(lo <= hi, "torch.histogramdd: min should not exceed max, but got min ", lo,
                   " max ", hi, " for dimension ", d);
    if (lo == hi) {
      lo -= 0.5;
      hi += 0.5;
    }
    // torch's linspace in T
    const int64_t steps = a.bins[d] + 1;
    const T start = static_cast<T>(lo), end = static_cast<T>(hi);
    const T step = (end - start) / static_cast<T>(steps - 1);
    const int64_t halfway = steps / 2;
    edges[d].resize(static_cast<size_t>(steps));
    for (int64_t k = 0; k < steps; ++k)
      edges[d][k] = k < halfway ? start + step * static_cast<T>(k)
                                : end - step * static_cast<T>(steps - k - 1);
    T* out = cpu::typed<T>(a.edges[d]);
    for (int64_t k = 0; k < steps; ++k) out[k * a.edges[d].strides[0]] = edges[d][k];
  }
  std::vector<int64_t> hist_strides = contiguous_strides(a.bins);
  std::vector<T> hist(static_cast<size_t>(a.hist.numel()), T(0));
  for (int64_t i = 0; i < M; ++i) {
    int64_t index = 0;
    bool skip = false;
    for (int64_t d = 0; d < D && !skip; ++d) {
      const T x = points[i * D + d];
      const std::vector<T>& e = edges[d];
      const int64_t n = static_cast<int64_t>(e.size());
      const T left = e.front(), right = e.back();
      if (!(x >= left && x <= right)) {
        skip = true;
        break;
      }
      int64_t pos = static_cast<int64_t>((x - left) * static_cast<T>(n - 1) / (right - left));
      const int64_t pos_min = std::max<int64_t>(0, pos - 1);
      const int64_t pos_max = std::min<int64_t>(pos + 2, n);
      pos = std::upper_bound(e.begin() + pos_min, e.begin() + pos_max, x) - e.begin() - 1;
      if (pos == n - 1) pos -= 1;  // the last bin includes its right edge
      index += hist_strides[d] * pos;
    }
    if (!skip) hist[index] += weights.empty() ? T(1) : weights[i];
  }
  if (a.density) {
    T total = 0;
    for (T v : hist) total += v;
    for (T& v : hist) v /= total;
    for (int64_t d = 0; d < D; ++d) {
      for (size_t flat = 0; flat < hist.size(); ++flat) {
        const int64_t k = (static_cast<int64_t>(flat) / hist_strides[d]) % a.bins[d];
        hist[flat] /= edges[d][k + 1] - edges[d][k];
      }
    }
  }
  T* out = cpu::typed<T>(a.hist);
  size_t i = 0;
  cpu::for_each_element(a.hist, [&](int64_t off, const std::vector<int64_t>&) { out[off] = hist[i++]; });
}

void host_histogram(const HistogramArgs& a) {
  if (a.self.dtype == DType::Float32) run<float>(a);
  else run<double>(a);
}

AOTISHIM_REGISTER_KERNEL(ops::histogram_kernel, DeviceType::CPU, host_histogram);

}  // namespace
}  // namespace aotishim
