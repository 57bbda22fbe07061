// topk on cuda: the selected dimension moves last and the rows are packed,
// CUB sorts each row with its positions (select_kernels.cu), and the first k
// columns are copied into the outputs as they lie. A full row sort is
// O(n log n), but one pass for every k and dtype.
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_select.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/select_kernels.h"
#include "ops/sorting.h"

namespace aotishim {
namespace cuda {

namespace {

// `t` with dimension `dim` moved last.
Tensor dim_last(const Tensor& t, int64_t dim) {
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

// A 0-d tensor as a 1-element vector (torch's topk takes dim 0 of a scalar).
Tensor at_least_1d(const Tensor& t) {
  if (t.dim() > 0) return t;
  return make_view(t, {1}, {1}, t.storage_offset);
}

}  // namespace

void cuda_topk(CudaDevice& device, const Tensor& self_in, int64_t k, int64_t dim, bool largest,
               const Tensor& values_in, const Tensor& indices_in) {
  const Tensor self = at_least_1d(self_in);
  const Tensor values = at_least_1d(values_in), indices = at_least_1d(indices_in);
  AOTISHIM_CHECK(dim >= 0 && dim < self.dim(), "cuda topk: dim ", dim, " out of range");
  const int64_t n = self.sizes[dim];
  AOTISHIM_CHECK(k >= 0 && k <= n, "cuda topk: k ", k, " out of range for size ", n);
  if (k == 0 || self.numel() == 0) return;
  const int64_t rows = self.numel() / n;

  DeviceScope on(device.index());
  const Tensor src = dim_last(self, dim);
  Tensor packed = make_empty(device, self.dtype, src.sizes);
  device.copy(packed, src);
  Tensor sorted = make_empty(device, self.dtype, src.sizes);
  Tensor order = make_empty(device, DType::Int64, src.sizes);
  std::vector<Tensor> scratch;
  Scratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_sort_rows(self.dtype, packed.data(), sorted.data(),
                   reinterpret_cast<int64_t*>(order.data()), rows, n, largest, alloc,
                   device.stream());

  // The first k of each sorted row, into the outputs' dim-last views.
  std::vector<int64_t> first_k = src.sizes;
  first_k.back() = k;
  const std::vector<int64_t> row_strides = contiguous_strides(src.sizes);
  device.copy(dim_last(values, dim), make_view(sorted, first_k, row_strides, 0));
  device.copy(dim_last(indices, dim), make_view(order, first_k, row_strides, 0));
  // scratch is released here: stream-ordered, after the sort has run.
}

namespace {
// Always sorted: an order is a valid answer for sorted=false too.
void topk_kernel(const TopkArgs& a) {
  cuda_topk(static_cast<CudaDevice&>(a.self.device()), a.self, a.k, a.dim, a.largest, a.values,
            a.indices);
}
AOTISHIM_REGISTER_KERNEL(ops::topk_kernel, DeviceType::CUDA, topk_kernel);
}  // namespace

}  // namespace cuda
}  // namespace aotishim
