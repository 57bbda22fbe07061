// CUDA runtime errors become aotishim errors (codes plus a message), never a
// crash or a silently ignored status.
#pragma once

#include <cuda_runtime_api.h>

#include "core/error.h"

namespace aotishim {
namespace cuda {

[[noreturn]] inline void fail_cuda(cudaError_t err, const char* what) {
  // Clear a non-sticky error so the next call does not report it again.
  cudaGetLastError();
  fail(str("CUDA error in ", what, ": ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
           ")"));
}

// A kernel launch reports its error only through cudaGetLastError, which
// also returns an error some earlier call on this thread left behind (a
// model's own failed call, already reported to it). Discard that before a
// launch, so the check after it names only the launch's own failure.
inline void discard_earlier_error() { cudaGetLastError(); }

}  // namespace cuda
}  // namespace aotishim

#define AOTISHIM_CUDA_CHECK(expr)                                        \
  do {                                                                   \
    cudaError_t aotishim_cuda_err_ = (expr);                             \
    if (aotishim_cuda_err_ != cudaSuccess)                               \
      ::aotishim::cuda::fail_cuda(aotishim_cuda_err_, #expr);            \
  } while (0)
