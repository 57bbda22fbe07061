// histc on cuda: when min == max the range is the data's own, reduced on the
// device and read back (the one synchronisation; torch reads its min and max
// back too), widened by 1 on both sides in the accumulation type when it is
// one point; then the elements are counted (histc_kernels.cu).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/histc_kernels.h"
#include "ops/histc.h"

namespace aotishim {
namespace cuda {

namespace {

// x in the dtype torch's cuda histc bins in (float32 but for float64).
double in_acc(DType t, double x) {
  return t == DType::Float64 ? x : static_cast<double>(static_cast<float>(x));
}

void histc(const HistcArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const DType t = a.self.dtype;
  const int ndim = static_cast<int>(a.self.dim());
  const int64_t numel = a.self.numel();
  const StridedView self = view_of(a.self);
  double lo = in_acc(t, a.min), hi = in_acc(t, a.max);
  if (lo == hi && numel > 0) {
    Tensor partial = make_empty(device, DType::Float64, {3 * kRangeBlocks});
    launch_histc_range(self, a.self.sizes.data(), ndim, numel,
                       reinterpret_cast<double*>(partial.data()), stream);
    std::vector<double> host(3 * kRangeBlocks);
    AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(host.data(), partial.data(), host.size() * sizeof(double),
                                        cudaMemcpyDeviceToHost, stream));
    AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
    lo = INFINITY;
    hi = -INFINITY;
    bool nan = false;
    for (int b = 0; b < kRangeBlocks; ++b) {
      lo = std::min(lo, host[3 * b]);
      hi = std::max(hi, host[3 * b + 1]);
      nan = nan || host[3 * b + 2] != 0.0;
    }
    if (nan) lo = hi = NAN;  // torch's min and max propagate NaN
  }
  if (lo == hi) {
    lo = in_acc(t, lo - 1);
    hi = in_acc(t, hi + 1);
  }
  AOTISHIM_CHECK(std::isfinite(lo) && std::isfinite(hi), "histc: range of [", lo, ", ", hi,
                 "] is not finite");
  AOTISHIM_CHECK(lo < hi, "histc: max must be larger than min");
  Tensor counts = make_empty(device, DType::UInt64, {a.bins});
  device.count_command();
  launch_histc(self, a.self.sizes.data(), ndim, numel, a.bins, lo, hi,
               reinterpret_cast<unsigned long long*>(counts.data()), view_of(a.out), stream);
}

AOTISHIM_REGISTER_KERNEL(ops::histc_kernel, DeviceType::CUDA, histc);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
