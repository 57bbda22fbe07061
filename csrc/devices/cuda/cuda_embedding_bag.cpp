// _embedding_bag on cuda: the offsets and indices are checked on the device
// first (torch's errors, read back before anything is written: torch's own
// kernel asserts instead), then the bags are reduced (embedding_bag_kernels.cu).
#include <cuda_runtime_api.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/embedding_bag_kernels.h"
#include "ops/embedding_bag.h"

namespace aotishim {
namespace cuda {

namespace {

IndexVector index_vector(const Tensor& t) {
  IndexVector v;
  v.data = t.data();
  v.is32 = t.dtype == DType::Int32;
  v.stride = t.strides[0];
  v.size = t.sizes[0];
  return v;
}

void check_bags(CudaDevice& device, const EmbeddingBagArgs& a, cudaStream_t stream) {
  Tensor found = make_empty(device, DType::Int64, {3});
  launch_embedding_bag_check(index_vector(a.indices), index_vector(a.offsets),
                             a.weight.sizes[0], reinterpret_cast<BagCheck*>(found.data()), stream);
  BagCheck c{};
  AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(&c, found.data(), sizeof(c), cudaMemcpyDeviceToHost, stream));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  const int64_t n = a.indices.sizes[0];
  switch (c.code) {
    case 0: return;
    case 1:
      fail(str("_embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the "
               "mini-batch has to start from position 0. However, got ", c.value));
    case 2:
      fail(str("_embedding_bag: offsets must be non-decreasing, but offsets[", c.position,
               "] = ", c.value, " is below offsets[", c.position - 1, "]"));
    case 3:
      fail(str("_embedding_bag: offsets[-1] can not be greater than input's length ", n,
               " but got offsets[-1] of ", c.value));
    default:
      fail(str("_embedding_bag: index ", c.position, " of input takes value ", c.value,
               " which is not in the valid range [0, ", a.weight.sizes[0], ")"));
  }
}

void embedding_bag(const EmbeddingBagArgs& a) {
  // Measured against torch cuda on an H200: for float64 weights its
  // offset2bag output differs from ours (float32, float16, bfloat16 match).
  AOTISHIM_CHECK(a.weight.dtype != DType::Float64,
                 "cuda _embedding_bag of float64 weights is not supported yet (float32, float16 "
                 "and bfloat16 are)");
  auto& device = static_cast<CudaDevice&>(a.weight.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  check_bags(device, a, stream);

  for (const Tensor* t : {&a.offset2bag, &a.bag_size, &a.max_indices})
    if (t->numel() > 0) device.fill_zero(*t);
  EmbeddingBagLaunch L;
  L.dtype = a.weight.dtype;
  L.weight = a.weight.data();
  L.ws0 = a.weight.strides[0];
  L.ws1 = a.weight.strides[1];
  L.rows = a.weight.sizes[0];
  L.D = a.weight.sizes[1];
  L.indices = index_vector(a.indices);
  L.offsets = index_vector(a.offsets);
  if (a.has_per_sample_weights) {
    L.per_sample_weights = a.per_sample_weights.data();
    L.psw_stride = a.per_sample_weights.strides[0];
  }
  L.mode = a.mode;
  L.padding_idx = a.padding_idx;
  L.bags = a.bags;
  L.output = a.output.data();
  L.aux32 = a.bag_size.dtype == DType::Int32;
  L.offset2bag = a.offset2bag.data();
  L.bag_size = a.bag_size.data();
  L.max_indices = a.max_indices.data();
  device.count_command();
  launch_embedding_bag(L, stream);
}

AOTISHIM_REGISTER_KERNEL(ops::embedding_bag_kernel, DeviceType::CUDA, embedding_bag);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
