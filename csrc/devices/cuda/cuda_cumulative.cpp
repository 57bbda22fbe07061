// cumsum and cumprod on cuda: both tensors seen with the scanned dimension
// last (views, no copies) and scanned by CUB (scan_kernels.cu).
// logcumsumexp has no cuda kernel yet.
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/scan_kernels.h"
#include "ops/cumulative.h"

namespace aotishim {
namespace cuda {

namespace {

LineView dim_last(const Tensor& t, int64_t dim) {
  AOTISHIM_CHECK(t.dim() <= kMaxCopyDims, "cuda cumulative ops: up to ", kMaxCopyDims,
                 " dimensions, got ", t.dim());
  LineView v;
  v.data = t.data();
  v.dtype = t.dtype;
  v.ndim = static_cast<int>(t.dim());
  int k = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    v.sizes[k] = t.sizes[d];
    v.strides[k++] = t.strides[d];
  }
  v.sizes[k] = t.sizes[dim];
  v.strides[k] = t.strides[dim];
  return v;
}

void cumulative(const CumulativeArgs& a) {
  AOTISHIM_CHECK(a.kind != CumulativeKind::LogSumExp,
                 "logcumsumexp has no cuda kernel yet (cumsum and cumprod do)");
  // Measured against torch cuda on an H200: float16/bfloat16 sums drifted
  // past torch's error, so they are refused rather than answered less exactly.
  AOTISHIM_CHECK(a.self.dtype != DType::Float16 && a.self.dtype != DType::BFloat16 &&
                     a.out.dtype != DType::Float16 && a.out.dtype != DType::BFloat16,
                 "cuda cumsum/cumprod of float16 and bfloat16 are not supported yet (their scan "
                 "does not round as torch cuda's does); other dtypes are");
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  std::vector<Tensor> scratch;
  ScanScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_cumulative(dim_last(a.out, a.dim), dim_last(a.self, a.dim),
                    a.kind == CumulativeKind::Product, alloc, device.stream());
  // scratch is released here, stream-ordered after the scan.
}

AOTISHIM_REGISTER_KERNEL(ops::cumulative, DeviceType::CUDA, cumulative);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
