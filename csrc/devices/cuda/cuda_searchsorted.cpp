// searchsorted (and bucketize, searchsorted_Scalar through it) on cuda: a
// sorter is checked on the device first and the answer read back (torch
// cuda reads the sorter's min and max back for the same error), then one
// thread bisects per element of self (searchsorted_kernels.cu).
#include <cuda_runtime_api.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/searchsorted_kernels.h"
#include "ops/searchsorted.h"

namespace aotishim {
namespace cuda {

namespace {

void check_sorter(CudaDevice& device, const Tensor& sorter, int64_t n, cudaStream_t stream) {
  Tensor bad = make_empty(device, DType::Int32, {1});
  launch_sorter_check(reinterpret_cast<const int64_t*>(sorter.data()), sorter.sizes.data(),
                      sorter.strides.data(), static_cast<int>(sorter.dim()), n,
                      reinterpret_cast<int*>(bad.data()), stream);
  int found = 0;
  AOTISHIM_CUDA_CHECK(
      cudaMemcpyAsync(&found, bad.data(), sizeof(found), cudaMemcpyDeviceToHost, stream));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  AOTISHIM_CHECK(found == 0, "torch.searchsorted(): sorter index out of range");
}

void searchsorted(const SearchsortedArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const Tensor& seq = a.sequence;
  const int64_t last = seq.dim() - 1;
  const int64_t n = seq.sizes[last];
  if (a.has_sorter) check_sorter(device, a.sorter, n, stream);

  AOTISHIM_CHECK(a.self.dim() <= kMaxCopyDims, "cuda searchsorted: up to ", kMaxCopyDims,
                 " dimensions, got ", a.self.dim());
  SearchLaunch L;
  L.dtype = a.self.dtype;
  L.sequence = seq.data();
  L.self = a.self.data();
  L.out = a.out.data();
  L.out_int32 = a.out.dtype == DType::Int32;
  L.sorter = a.has_sorter ? reinterpret_cast<const int64_t*>(a.sorter.data()) : nullptr;
  L.right = a.right;
  L.n = n;
  L.seq_step = seq.strides[last];
  L.sorter_step = a.has_sorter ? a.sorter.strides[last] : 0;
  if (a.self.dim() == 0) {  // one value (a 1-D sequence): a line of one
    L.ndim = 1;
    L.sizes[0] = 1;
  } else {
    L.ndim = static_cast<int>(a.self.dim());
    for (int d = 0; d < L.ndim; ++d) {
      L.sizes[d] = a.self.sizes[d];
      L.self_strides[d] = a.self.strides[d];
      L.out_strides[d] = a.out.strides[d];
      // an N-D sequence (and its sorter) has a line per leading index; a
      // 1-D one serves every element (stride 0)
      if (seq.dim() > 1 && d < L.ndim - 1) {
        L.seq_strides[d] = seq.strides[d];
        if (a.has_sorter) L.sorter_strides[d] = a.sorter.strides[d];
      }
    }
  }
  device.count_command();
  launch_searchsorted(L, stream);
}

AOTISHIM_REGISTER_KERNEL(ops::searchsorted_kernel, DeviceType::CUDA, searchsorted);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
