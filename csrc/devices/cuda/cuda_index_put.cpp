// index_put on cuda (index_kernels.cu, reduce_kernels.cu): every position
// of the indexing result is resolved to the element of the target it
// writes, its indices checked on the device and the verdict read back
// before anything is written (the one synchronisation; torch cuda asserts
// on the device, and the message is torch cpu's). The (element, position)
// pairs are then sorted stably by element, so each element's values come
// in index order: without accumulate the last one wins (torch cuda's
// deterministic order; its default kernel leaves repeated indices to
// whichever thread writes last), with accumulate they are summed as torch
// cuda's sorted-index kernels sum them, which round differently by the
// size of the slice an index moves (reduce_kernels.h, IndexPutSum).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/index_geometry.h"
#include "devices/cuda/index_kernels.h"
#include "devices/cuda/reduce_kernels.h"
#include "devices/cuda/target_sort.h"
#include "ops/index_put.h"

namespace aotishim {
namespace cuda {

namespace {

// torch cuda's accumulation rule for this indexing: by the number of
// elements each index moves (the product of the sizes of the dims it does
// not index that follow the indexed ones; all of them when the indexed dims
// are apart, which torch moves to the front).
IndexPutSum torch_summation(const IndexPutArgs& a) {
  const std::vector<int64_t>& dims = a.plan.dims;
  bool adjacent = true;
  for (size_t k = 1; k < dims.size(); ++k) adjacent = adjacent && dims[k] == dims[k - 1] + 1;
  int64_t slice = 1;
  for (int64_t d = 0; d < a.target.dim(); ++d) {
    const bool indexed = std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!indexed && (!adjacent || d > dims.back())) slice *= a.target.sizes[d];
  }
  if (slice == 1) return IndexPutSum::kWarpSum;
  return slice <= 32 ? IndexPutSum::kSumThenAdd : IndexPutSum::kSerial;
}

void index_put(const IndexPutArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.target.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const IndexPlan& plan = a.plan;
  const IndexGeometry g =
      index_geometry(a.target, plan.sizes, plan.self_strides, plan.indices, plan.dims);
  int64_t numel = 1;
  for (int64_t s : plan.sizes) numel *= s;
  if (numel == 0) return;
  Tensor keys = make_empty(device, DType::Int64, {numel});
  Tensor positions = make_empty(device, DType::Int64, {numel});
  Tensor problem = make_empty(device, DType::Int64, {3});
  device.count_command();
  // Keys are element offsets in the target: a fresh clone, whose elements are distinct.
  launch_index_targets(g, numel, reinterpret_cast<uint64_t*>(keys.data()),
                       reinterpret_cast<int64_t*>(positions.data()),
                       reinterpret_cast<IndexProblem*>(problem.data()), stream);
  raise_index_problem(device, problem, a.target.sizes);

  const SortedTargets sorted = sort_by_target(device, keys, positions, a.target);
  const uint64_t* k = sorted.key_data();
  const int64_t* p = sorted.position_data();
  const ShapedView values = shaped_view(a.values);  // seen at the result's sizes
  device.count_command();
  if (a.accumulate) {
    launch_index_put_accumulate(a.target.dtype, torch_summation(a), k, p, numel, a.target.data(),
                                values, stream);
  } else {
    launch_assign_last(k, p, numel, a.target.data(), values, a.target.itemsize(), stream);
  }
}

AOTISHIM_REGISTER_KERNEL(ops::index_put_kernel, DeviceType::CUDA, index_put);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
