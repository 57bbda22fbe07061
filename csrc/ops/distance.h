// _cdist_forward and _pdist_forward (ops/distance.cpp); devices register the
// kernels.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// p-norm distances between rows. cdist: x1 (B..., P, M), x2 (B..., R, M),
// views already broadcast over the batch dims (stride 0 where broadcast);
// out (B..., P, R) fresh and contiguous. pdist: x1 (N, M), out (N (N-1) / 2)
// the pairs i < j in row order. p = 0: the count of differing elements; 1:
// the sum of |d|; 2: sqrt of the sum of d^2; inf: the max of |d| (NaN
// propagates); else (sum |d|^p)^(1/p). euclid_mm (cdist, p = 2): torch's
// matrix-product form, sqrt(max(|a|^2 - 2 a.b + |b|^2, 0)).
struct DistanceArgs {
  Tensor x1, x2, out;  // x2 unused for pdist
  double p = 2;
  bool pairwise = false;  // pdist
  bool euclid_mm = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const DistanceArgs&)> distance_kernel;
}  // namespace ops

}  // namespace aotishim
