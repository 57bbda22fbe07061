// scatter_reduce on cuda, and what scatter (src and value) and index_reduce
// lower onto (reduce_kernels.cu): every index position is resolved to the
// element of out it lands on, its index checked on the device and the
// verdict read back before anything is written (the one synchronisation;
// torch cuda asserts on the device, and the message is torch cpu's). The
// (element, position) pairs are sorted stably by element and one thread per
// element reduces its values in index order, in float for the half types,
// rounded once: deterministic, as the cpu kernel. torch cuda reduces with
// atomics in its threads' order (sum, prod and mean of floats differ from
// run to run by rounding; its half types round at every step) and writes
// scatter's repeated indices in no set order; here the last in index order
// wins, as on the cpu.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/index_kernels.h"
#include "devices/cuda/reduce_kernels.h"
#include "devices/cuda/target_sort.h"
#include "ops/scatter_reduce.h"

namespace aotishim {
namespace cuda {

namespace {

// Whether every element of t has its own address (dims sorted by stride
// each step past all the smaller ones reach): element offsets then name
// elements, as the sort's keys must.
bool elements_distinct(const Tensor& t) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes[d] > 1) dims.emplace_back(t.strides[d], t.sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= reach) return false;
    reach += stride * (size - 1);
  }
  return true;
}

ScatterKind kind_of(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::Sum: return ScatterKind::kSum;
    case ScatterReduce::Prod: return ScatterKind::kProd;
    case ScatterReduce::Mean: return ScatterKind::kMean;
    case ScatterReduce::Amax: return ScatterKind::kAmax;
    case ScatterReduce::Amin: return ScatterKind::kAmin;
    case ScatterReduce::Assign: break;
  }
  fail("cuda scatter_reduce: a plain write has no reduction");
}

void scatter_reduce(const ScatterReduceArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const int64_t numel = a.index.numel();
  if (numel == 0) return;
  // Reduced in a packed copy when out's elements share memory.
  const bool staged = !elements_distinct(a.out);
  Tensor target = a.out;
  if (staged) {
    target = make_empty(device, a.out.dtype, a.out.sizes);
    device.copy(target, a.out);
  }
  ScatterGeometry g;
  g.index = shaped_view(a.index);
  g.is32 = a.index.dtype == DType::Int32;
  AOTISHIM_CHECK(target.dim() == a.index.dim() && a.src.dim() == a.index.dim(),
                 "cuda scatter_reduce: index, src and out must have one number of dimensions");
  for (int64_t d = 0; d < target.dim(); ++d) g.target_strides[d] = target.strides[d];
  g.dim = static_cast<int>(a.dim);
  g.limit = target.dim() == 0 ? 1 : target.sizes[a.dim];

  Tensor keys = make_empty(device, DType::Int64, {numel});
  Tensor positions = make_empty(device, DType::Int64, {numel});
  Tensor problem = make_empty(device, DType::Int64, {3});
  device.count_command();
  launch_scatter_targets(g, numel, reinterpret_cast<uint64_t*>(keys.data()),
                         reinterpret_cast<int64_t*>(positions.data()),
                         reinterpret_cast<IndexProblem*>(problem.data()), stream);
  IndexProblem found{};
  device.download(&found, problem);
  AOTISHIM_CHECK(found.found == 0, "index ", found.value, " is out of bounds for dimension ", a.dim,
                 " with size ", g.limit);

  const SortedTargets sorted = sort_by_target(device, keys, positions, target);
  // src's elements at index's positions (src may be larger than index).
  ShapedView source = shaped_view(a.src);
  for (int64_t d = 0; d < a.index.dim(); ++d) source.sizes[d] = a.index.sizes[d];
  const uint64_t* k = sorted.key_data();
  const int64_t* p = sorted.position_data();
  device.count_command();
  if (a.reduce == ScatterReduce::Assign) {
    launch_assign_last(k, p, numel, target.data(), source, target.itemsize(), stream);
  } else {
    launch_scatter_reduce(target.dtype, kind_of(a.reduce), a.include_self, k, p, numel,
                          target.data(), source, stream);
  }
  if (staged) device.copy(a.out, target);
}

AOTISHIM_REGISTER_KERNEL(ops::scatter_reduce_kernel, DeviceType::CUDA, scatter_reduce);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
