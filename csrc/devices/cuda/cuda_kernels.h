// Kernels of the cuda backend (cuda_kernels.cu), launched on a given stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "core/error.h"
#include "core/tensor.h"

namespace aotishim {
namespace cuda {

constexpr int kMaxCopyDims = 16;

// A strided view of device memory: `data` points at element 0.
struct StridedView {
  void* data = nullptr;
  DType dtype = DType::Float32;
  int64_t strides[kMaxCopyDims] = {};
};

// The kernels' view of a tensor on a cuda device (throws beyond kMaxCopyDims).
inline StridedView view_of(const Tensor& t) {
  AOTISHIM_CHECK(t.dim() <= kMaxCopyDims, "cuda tensors support up to ", kMaxCopyDims,
                 " dimensions, got ", t.dim());
  StridedView v;
  v.data = t.data();
  v.dtype = t.dtype;
  for (int64_t d = 0; d < t.dim(); ++d) v.strides[d] = t.strides[d];
  return v;
}

// dst = src elementwise over `sizes` (ndim <= kMaxCopyDims), converting any
// dtype to any other as torch's copy_ (c10::convert): a real source gives
// imaginary part 0, a complex one gives a real dtype its real part (bool: true
// when either part is nonzero), floats truncate into integers, and doubles or
// integers reach float16/bfloat16 through float.
void launch_copy(const StridedView& dst, const StridedView& src, const int64_t* sizes, int ndim,
                 cudaStream_t stream);

// t = beta * t (t = 0 when beta == 0, so NaN does not propagate); floating dtypes.
void launch_scale(const StridedView& t, const int64_t* sizes, int ndim, double beta,
                  cudaStream_t stream);

// dst += src elementwise over `sizes`, one dtype (floating); src may
// broadcast (stride 0), dst must not overlap itself.
void launch_add(const StridedView& dst, const StridedView& src, const int64_t* sizes, int ndim,
                cudaStream_t stream);

// Occupies `stream` for about `microseconds` (one thread spinning on the
// clock), so work queued behind it runs back to back: timing that work with
// events then measures the device, not how fast the host queued it.
void launch_busy_wait(double microseconds, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
