// masked_select on cuda (index_kernels.cu): a running count of the mask's
// true elements gives each selected element its slot; the total comes back
// to the host (the result's length depends on it: the one synchronisation,
// as torch cuda's), then one thread per element copies the selected ones.
// Row-major order of the broadcast shape, as torch cuda's index by a mask.
#include <cuda_runtime_api.h>

#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/index_kernels.h"
#include "ops/masked_select.h"

namespace aotishim {
namespace cuda {

namespace {

void masked_select(MaskedSelectArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const int64_t numel = a.self.numel();
  if (numel == 0) {
    a.out = make_empty(device, a.self.dtype, {0});
    return;
  }
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
  int64_t selected = 0;
  device.download(&selected, make_view(positions, {1}, {1}, positions.storage_offset + numel));
  AOTISHIM_CHECK(selected >= 0 && selected <= numel, "cuda masked_select: count ", selected,
                 " out of range for ", numel, " elements");
  a.out = make_empty(device, a.self.dtype, {selected});
  if (selected == 0) return;
  device.count_command();
  launch_masked_select(shaped_view(a.self), shaped_view(a.mask), numel,
                       reinterpret_cast<const int64_t*>(positions.data()), a.out.data(),
                       a.self.itemsize(), stream);
}

AOTISHIM_REGISTER_KERNEL(ops::masked_select_kernel, DeviceType::CUDA, masked_select);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
