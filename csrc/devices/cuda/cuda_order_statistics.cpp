// kthvalue / median / nanmedian / mode on cuda: self seen with the reduced
// dimension last (or, for the whole-tensor medians, as one line in row-major
// order), each line sorted and picked from (order_statistics_kernels.cu).
// Values and indices are written through their strides in keepdim form.
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/order_statistics_kernels.h"
#include "ops/order_statistics.h"

namespace aotishim {
namespace cuda {

namespace {

// t's elements in row-major order with dimension `dim` moved last (dim < 0:
// as t lies); a 0-d tensor is one element at offset 0.
ElementWalk walk_of(const Tensor& t, int64_t dim) {
  AOTISHIM_CHECK(t.dim() <= kMaxCopyDims, "cuda order statistics: up to ", kMaxCopyDims,
                 " dimensions, got ", t.dim());
  ElementWalk w;
  w.ndim = static_cast<int>(t.dim());
  int k = 0;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d == dim) continue;
    w.sizes[k] = t.sizes[d];
    w.strides[k++] = t.strides[d];
  }
  if (dim >= 0 && dim < t.dim()) {
    w.sizes[k] = t.sizes[dim];
    w.strides[k] = t.strides[dim];
  }
  return w;
}

OrderPick pick_of(SelectKind kind) {
  switch (kind) {
    case SelectKind::Kth: return OrderPick::Kth;
    case SelectKind::Median: return OrderPick::Median;
    case SelectKind::NanMedian: return OrderPick::NanMedian;
    case SelectKind::Mode: return OrderPick::Mode;
  }
  fail("cuda order statistics: unknown kind");
}

void select(const SelectArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  SelectLaunch L;
  L.dtype = a.self.dtype;
  L.self = a.self.data();
  L.pick = pick_of(a.kind);
  L.k = a.k;
  L.values = a.values.data();
  if (a.dim < 0) {
    // median(self) / nanmedian(self): torch cuda sorts the flattened tensor
    // and picks from it; no indices. Its sort of up to 128 elements compares
    // (every NaN above every number), longer ones sort by radix, where a NaN
    // with its sign bit set sorts below every number.
    L.self_walk = walk_of(a.self, -1);
    L.rows = 1;
    L.n = a.self.numel();
    L.nan_by_sign = L.n > 128;
  } else {
    // kthvalue and mode: torch cuda's radix order (every NaN at the top)
    L.self_walk = walk_of(a.self, a.dim);
    L.n = a.self.dim() == 0 ? 1 : a.self.sizes[a.dim];
    L.rows = L.n == 0 ? 0 : a.self.numel() / L.n;
    L.values_walk = walk_of(a.values, a.dim);
    L.indices = reinterpret_cast<int64_t*>(a.indices.data());
    L.indices_walk = walk_of(a.indices, a.dim);
  }
  std::vector<Tensor> scratch;
  SelectScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_select(L, alloc, device.stream());
  // scratch is released here, stream-ordered after the kernels.
}

AOTISHIM_REGISTER_KERNEL(ops::select_kernel, DeviceType::CUDA, select);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
