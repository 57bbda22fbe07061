#include "devices/cuda/target_sort.h"

#include <vector>

#include "devices/cuda/index_kernels.h"
#include "devices/cuda/reduce_kernels.h"

namespace aotishim {
namespace cuda {

SortedTargets sort_by_target(CudaDevice& device, const Tensor& keys, const Tensor& positions,
                             const Tensor& target) {
  const int64_t n = keys.numel();
  SortedTargets out{make_empty(device, DType::Int64, {n}), make_empty(device, DType::Int64, {n})};
  // CUB's scratch, freed in stream order once the sort is queued.
  std::vector<Tensor> scratch;
  ReduceScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_sort_by_target(reinterpret_cast<const uint64_t*>(keys.data()),
                        reinterpret_cast<const int64_t*>(positions.data()),
                        reinterpret_cast<uint64_t*>(out.keys.data()),
                        reinterpret_cast<int64_t*>(out.positions.data()), n, target_key_bits(target),
                        alloc, device.stream());
  return out;
}

}  // namespace cuda
}  // namespace aotishim
