// nonzero on cuda: CUB selects the positions of the nonzero elements and
// counts them on the stream; the count comes back to the host (the output's
// size depends on it) and a kernel turns positions into coordinates.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_select.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/select_kernels.h"
#include "ops/nonzero.h"

namespace aotishim {
namespace cuda {

Tensor cuda_nonzero(CudaDevice& device, const Tensor& self) {
  const int64_t ndim = self.dim(), numel = self.numel();
  if (numel == 0) return make_empty(device, DType::Int64, {0, ndim}, {1, 1});
  DeviceScope on(device.index());
  Tensor data = self;
  if (!self.is_contiguous()) {
    data = make_empty(device, self.dtype, self.sizes);
    device.copy(data, self);
  }
  Tensor positions = make_empty(device, DType::Int64, {numel});
  Tensor count = make_empty(device, DType::Int64, {1});
  std::vector<Tensor> scratch;
  Scratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  cudaStream_t stream = device.stream();
  device.count_command();
  launch_nonzero_positions(self.dtype, data.data(), numel,
                           reinterpret_cast<int64_t*>(positions.data()),
                           reinterpret_cast<int64_t*>(count.data()), alloc, stream);
  int64_t found = 0;
  AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(&found, count.data(), sizeof(found),
                                      cudaMemcpyDeviceToHost, stream));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  AOTISHIM_CHECK(found >= 0 && found <= numel, "cuda nonzero: count ", found,
                 " out of range for ", numel, " elements");
  // torch's layout: (found, ndim) with strides (1, found).
  Tensor by_dim = make_empty(device, DType::Int64, {ndim, found});
  launch_unravel(reinterpret_cast<const int64_t*>(positions.data()), found, self.sizes.data(),
                 static_cast<int>(ndim), reinterpret_cast<int64_t*>(by_dim.data()), stream);
  return make_view(by_dim, {found, ndim}, {1, std::max<int64_t>(found, 1)}, 0);
}

namespace {
void nonzero_kernel(NonzeroArgs& args) {
  args.out = cuda_nonzero(static_cast<CudaDevice&>(args.self.device()), args.self);
}
AOTISHIM_REGISTER_KERNEL(ops::nonzero_kernel, DeviceType::CUDA, nonzero_kernel);
}  // namespace

}  // namespace cuda
}  // namespace aotishim
