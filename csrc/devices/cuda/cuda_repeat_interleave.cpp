// repeat_interleave(repeats) on cuda (index_kernels.cu): CUB's running sum
// of the repeats, a check for negative ones, and the total read back (the
// result's length depends on it: the one synchronisation); then each
// element of the result finds its index by a binary search of the sums.
// torch cuda asserts on the device where this fails with torch cpu's
// messages (a negative repeat, a total other than output_size).
#include <cuda_runtime_api.h>

#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/index_kernels.h"
#include "ops/repeat_interleave.h"

namespace aotishim {
namespace cuda {

namespace {

void repeat_interleave(RepeatInterleaveArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.repeats.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const int64_t n = a.repeats.sizes[0];
  const bool is32 = a.repeats.dtype == DType::Int32;
  // No repeats: an empty result before any check, as torch returns it
  // (output_size is not compared).
  if (n == 0) {
    a.out = make_empty(device, a.repeats.dtype, {0});
    return;
  }
  Tensor cumsum = make_empty(device, DType::Int64, {n});
  Tensor summary = make_empty(device, DType::Int64, {3});
  std::vector<Tensor> scratch;
  IndexScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_repeat_prefix(a.repeats.data(), is32, a.repeats.strides[0], n,
                       reinterpret_cast<int64_t*>(cumsum.data()),
                       reinterpret_cast<RepeatSummary*>(summary.data()), alloc, stream);
  RepeatSummary found{};
  device.download(&found, summary);
  AOTISHIM_CHECK(found.negative == 0, "repeats can not be negative");
  AOTISHIM_CHECK(found.total >= 0, "repeat_interleave: the total of repeats overflows");
  AOTISHIM_CHECK(a.output_size < 0 || a.output_size == found.total,
                 "allocated size does not match required size (output_size ", a.output_size,
                 ", repeats total ", found.total, ")");
  a.out = make_empty(device, a.repeats.dtype, {found.total});
  device.count_command();
  launch_repeat_fill(reinterpret_cast<const int64_t*>(cumsum.data()), n, found.total,
                     a.out.data(), is32, stream);
}

AOTISHIM_REGISTER_KERNEL(ops::repeat_interleave_kernel, DeviceType::CUDA, repeat_interleave);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
