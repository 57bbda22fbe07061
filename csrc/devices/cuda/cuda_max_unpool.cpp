// max_unpool2d/3d on cuda (pooling_kernels.cu). Where several elements of
// self name one position the last of them in self's order wins, as in the
// cpu kernel here (torch's cuda kernel lets the writes race: it has no rule
// to follow). An index outside out's plane fails the op with torch's cpu
// message (torch's cuda kernel asserts on the device instead, which leaves
// the context unusable): the first such element is read back after the
// kernels, the op's one synchronisation, and the output is dropped. While a
// CUDA graph is recorded nothing can be read back, and such elements are
// only left out of the output.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/pooling_kernels.h"
#include "ops/max_unpool.h"

namespace aotishim {
namespace cuda {

namespace {

// Fails with torch's message when the kernels found an index outside out's
// plane; first_bad holds the first such element's flat index in self.
void report_invalid_index(const UnpoolArgs& a, const Tensor& first_bad, cudaStream_t stream) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTISHIM_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  if (capturing != cudaStreamCaptureStatusNone) return;
  unsigned long long found = 0;
  AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(&found, first_bad.data(), sizeof(found),
                                      cudaMemcpyDeviceToHost, stream));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (found == ~0ULL) return;
  // the element (n, c, d, h, w) of self, and the index it carries
  const std::vector<int64_t>& sizes = a.self.sizes;
  int64_t rest = static_cast<int64_t>(found), at[5] = {};
  for (int d = 4; d >= 0; --d) {
    at[d] = rest % sizes[d];
    rest /= sizes[d];
  }
  int64_t offset = 0;
  for (int d = 0; d < 5; ++d) offset += at[d] * a.indices.strides[d];
  int64_t index = 0;
  const int64_t* where = reinterpret_cast<const int64_t*>(a.indices.data()) + offset;
  AOTISHIM_CUDA_CHECK(
      cudaMemcpyAsync(&index, where, sizeof(index), cudaMemcpyDeviceToHost, stream));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const std::vector<int64_t>& out = a.out.sizes;
  if (a.spatial == 2)
    fail(str("Found an invalid max index: ", index, " (output volumes are of size ", out[3], "x",
             out[4], ")"));
  fail(str("Found an invalid max index: ", index, " (output volumes are of size ", out[2], "x",
           out[3], "x", out[4], ")"));
}

void max_unpool(const UnpoolArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  Tensor winners = make_empty(device, DType::UInt64, {a.out.numel()});
  Tensor first_bad = make_empty(device, DType::UInt64, {1});
  UnpoolLaunch L;
  L.item_size = a.self.itemsize();
  L.self = volume_of(a.self);
  L.indices = volume_of(a.indices);
  L.out = volume_of(a.out);
  L.winners = reinterpret_cast<unsigned long long*>(winners.data());
  L.first_bad = reinterpret_cast<unsigned long long*>(first_bad.data());
  device.count_command();
  launch_max_unpool(L, stream);
  report_invalid_index(a, first_bad, stream);
}

AOTISHIM_REGISTER_KERNEL(ops::max_unpool_kernel, DeviceType::CUDA, max_unpool);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
