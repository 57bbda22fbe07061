// sort on cuda: the sorted dimension moves last and the rows are packed,
// CUB sorts each row with its positions (sort_kernels.cu, stable for both
// entries: an order torch's unstable sort may also give), and values and
// indices are copied into the outputs' dim-last views as they lie.
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/sort_kernels.h"
#include "ops/sorting.h"

namespace aotishim {
namespace cuda {

namespace {

Tensor dim_last(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return make_view(t, {1}, {1}, t.storage_offset);
  std::vector<int64_t> sizes, strides;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    sizes.push_back(t.sizes[d]);
    strides.push_back(t.strides[d]);
  }
  sizes.push_back(t.sizes[dim]);
  strides.push_back(t.strides[dim]);
  return make_view(t, sizes, strides, t.storage_offset);
}

void sort(const SortArgs& a) {
  // Measured against torch cuda on an H200: bool keys came back in another
  // order among equal elements than torch's stable sort.
  AOTISHIM_CHECK(a.self.dtype != DType::Bool,
                 "cuda sort of bool tensors is not supported yet (numbers and floats are)");
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const Tensor src = dim_last(a.self, a.dim);
  const int64_t n = src.sizes.back(), rows = src.numel() / (n > 0 ? n : 1);
  if (src.numel() == 0) return;
  Tensor packed = make_empty(device, a.self.dtype, src.sizes);
  device.copy(packed, src);
  Tensor values = make_empty(device, a.self.dtype, src.sizes);
  Tensor order = make_empty(device, DType::Int64, src.sizes);
  std::vector<Tensor> scratch;
  SortScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_sort(a.self.dtype, packed.data(), values.data(), reinterpret_cast<int64_t*>(order.data()),
              rows, n, a.descending, alloc, device.stream());
  device.copy(dim_last(a.values, a.dim), values);
  device.copy(dim_last(a.indices, a.dim), order);
}

AOTISHIM_REGISTER_KERNEL(ops::sort_kernel, DeviceType::CUDA, sort);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
