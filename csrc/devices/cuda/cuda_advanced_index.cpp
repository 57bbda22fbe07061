// index.Tensor and masked_scatter on cuda (index_kernels.cu).
// index: every index is checked on the device and the verdict read back
// before the gather (the one synchronisation; torch cuda asserts on the
// device instead, and its message is torch cpu's here), then one thread per
// result element copies its element. masked_scatter: a running count of the
// mask's true elements gives each its source element; the total is read
// back to check that source is long enough (torch cuda asserts that on the
// device too).
#include <cuda_runtime_api.h>

#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/index_geometry.h"
#include "devices/cuda/index_kernels.h"
#include "ops/advanced_index.h"

namespace aotishim {
namespace cuda {

namespace {

void index_tensor(const IndexArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const IndexGeometry g = index_geometry(a.self, a.out.sizes, a.self_strides, a.indices, a.dims);
  const int64_t numel = a.out.numel();
  Tensor problem = make_empty(device, DType::Int64, {3});
  device.count_command();
  launch_index_check(g, numel, reinterpret_cast<IndexProblem*>(problem.data()), stream);
  raise_index_problem(device, problem, a.self.sizes);
  device.count_command();
  launch_index_gather(g, numel, a.self.data(), shaped_view(a.out), a.out.itemsize(), stream);
}

void masked_scatter(const MaskedScatterArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const int64_t numel = a.out.numel();
  // positions[e]: how many true elements precede element e; positions[numel]: all of them.
  Tensor positions = make_empty(device, DType::Int64, {numel + 1});
  std::vector<Tensor> scratch;
  IndexScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_mask_prefix(shaped_view(a.mask), numel,
                     reinterpret_cast<int64_t*>(positions.data()), alloc, stream);
  int64_t needed = 0;
  device.download(&needed, make_view(positions, {1}, {1}, positions.storage_offset + numel));
  const int64_t available = a.source.numel();
  AOTISHIM_CHECK(needed <= available, "masked_scatter: expected source to have at least ", needed,
                 " elements (the true elements of mask), but it has ", available);
  device.count_command();
  launch_masked_scatter(shaped_view(a.self), shaped_view(a.mask), shaped_view(a.source),
                        shaped_view(a.out), numel,
                        reinterpret_cast<const int64_t*>(positions.data()), a.out.itemsize(),
                        stream);
}

AOTISHIM_REGISTER_KERNEL(ops::index_kernel, DeviceType::CUDA, index_tensor);
AOTISHIM_REGISTER_KERNEL(ops::masked_scatter_kernel, DeviceType::CUDA, masked_scatter);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
