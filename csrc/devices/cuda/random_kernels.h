// The random ops' kernels on cuda (random_kernels.cu): a counter-based
// Philox4x32-10 generator, keyed by one 64-bit draw of the process-wide
// generator per op, so every element's numbers depend only on the key and
// the element's row-major position (and the launch shape not at all).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

enum class DeviceRandomKind : int32_t {
  Uniform,      // [a, b), redrawn where the stored value rounds to b
  Normal,       // mean a, standard deviation b (complex: each part b / sqrt(2))
  Exponential,  // rate a
  Integer,      // low + [0, range) without bias (range 0: all 2^64 values)
  Bernoulli,    // 1 with probability a, or p[i] (packed float64) when p is set
  Permutation,  // out[i] = perm[i] (a packed int64 permutation made on the host)
  Dropout,      // mask = draw < 1 - a; out = input * mask * b
};

struct RandomLaunch {
  DeviceRandomKind kind = DeviceRandomKind::Uniform;
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t numel = 0;
  StridedView out;    // any dtype aotishim has (complex: interleaved parts)
  StridedView input;  // Dropout: out's dtype, any strides
  StridedView mask;   // Dropout: bool
  const double* p = nullptr;
  const int64_t* perm = nullptr;
  double a = 0.0, b = 1.0;
  int64_t low = 0;
  uint64_t range = 0;
  uint64_t key = 0;
};

// Fills launch.out on `stream`. Throws for dtypes the kind cannot produce.
void launch_random(const RandomLaunch& launch, cudaStream_t stream);

// *bad_out (device int32) = 1 when some of the n packed float64 values lies
// outside [0, 1] (NaN included), else 0.
void launch_check_probabilities(const double* p, int64_t n, int32_t* bad_out,
                                cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
