// topk and nonzero on the cuda device (cuda_topk.cpp, cuda_nonzero.cpp).
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace aotishim {
namespace cuda {

class CudaDevice;

// The k largest (or smallest) elements of self along dim (0 <= dim <
// max(self.dim(), 1), 0 <= k <= its size), sorted, into values (self's dtype)
// and indices (int64), both of self's shape with dim sized k, any strides.
void cuda_topk(CudaDevice& device, const Tensor& self, int64_t k, int64_t dim, bool largest,
               const Tensor& values, const Tensor& indices);

// (count, self.dim()) int64 coordinates of self's nonzero elements in
// row-major order. Reads the count back: the one synchronisation with the
// stream the data-dependent shape needs.
Tensor cuda_nonzero(CudaDevice& device, const Tensor& self);

}  // namespace cuda
}  // namespace aotishim
