// cumsum, cumprod and logcumsumexp on cuda: both tensors seen with the
// scanned dimension last (views, no copies) and scanned (scan_kernels.cu):
// by CUB in torch cuda's accumulation types, or, where torch cuda rounds
// every step to the result's dtype, in torch's order.
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/scan_kernels.h"
#include "ops/cumulative.h"

namespace aotishim {
namespace cuda {

namespace {

bool is_half_type(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

void cumulative(const CumulativeArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  std::vector<Tensor> scratch;
  ScanScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  const LineView out = line_view(a.out, a.dim), self = line_view(a.self, a.dim);
  // torch cuda sums and multiplies float16/bfloat16 results in their own
  // dtype (torch's cpu kernels accumulate them in float), and computes
  // logcumsumexp in the result's dtype: each step rounded, in its kernel's
  // order, which the rounded scan follows.
  if (a.kind == CumulativeKind::LogSumExp || is_half_type(a.out.dtype)) {
    const RoundedScan kind = a.kind == CumulativeKind::Sum       ? RoundedScan::Sum
                             : a.kind == CumulativeKind::Product ? RoundedScan::Product
                                                                 : RoundedScan::LogSumExp;
    launch_rounded_scan(out, self, kind, a.dim == a.self.dim() - 1, alloc, device.stream());
  } else {
    launch_cumulative(out, self, a.kind == CumulativeKind::Product, alloc, device.stream());
  }
  // scratch is released here, stream-ordered after the scan.
}

AOTISHIM_REGISTER_KERNEL(ops::cumulative, DeviceType::CUDA, cumulative);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
