// cummax / cummin on cuda (cumulative_extrema_kernels.cu).
#pragma once

#include <cuda_runtime_api.h>

#include "devices/cuda/scan_kernels.h"

namespace aotishim {
namespace cuda {

// values / indices (int64) = the running maximum (or minimum) of self along
// the last dimension of the views and the position where it was reached:
// the latest among equal elements, and once a NaN is seen, the latest NaN
// (torch cuda's rule, its cpu kernel's too). Each value is copied from
// self's element at that position, keeping its bits. Every real dtype and
// bool.
void launch_cumulative_extremum(const LineView& values, const LineView& indices,
                                const LineView& self, bool maximum, const ScanScratch& scratch,
                                cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
