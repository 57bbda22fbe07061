// cummax / cummin on cuda: self, values and indices seen with the scanned
// dimension last (views, no copies) and scanned by CUB
// (cumulative_extrema_kernels.cu).
#include <vector>

#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/cumulative_extrema_kernels.h"
#include "ops/cumulative_extrema.h"

namespace aotishim {
namespace cuda {

namespace {

void cumulative_extremum(const CumulativeExtremumArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  std::vector<Tensor> scratch;
  ScanScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_cumulative_extremum(line_view(a.values, a.dim), line_view(a.indices, a.dim),
                             line_view(a.self, a.dim), a.maximum, alloc, device.stream());
  // scratch is released here, stream-ordered after the scan.
}

AOTISHIM_REGISTER_KERNEL(ops::cumulative_extremum, DeviceType::CUDA, cumulative_extremum);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
