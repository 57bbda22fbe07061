// _cdist_forward and _pdist_forward: torch's checks and messages, cdist's
// batch broadcasting and its choice of method (compute_mode 0 / None: the
// matrix-product form for p = 2 when either side has more than 25 rows; 1:
// always for p = 2; 2: never), outputs contiguous as torch's.
#include "ops/distance.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const DistanceArgs&)> distance_kernel("distance");

void _cdist_forward(const OpCall& call, AtenTensorHandle x1_h, AtenTensorHandle x2_h, double p,
                    int64_t* compute_mode, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto x1_p = call.tensor(x1_h, "x1");
  auto x2_p = call.tensor(x2_h, "x2");
  const Tensor &x1 = *x1_p, &x2 = *x2_p;
  AOTISHIM_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  AOTISHIM_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  AOTISHIM_CHECK(x1.sizes.back() == x2.sizes.back(), "X1 and X2 must have the same number of "
                 "columns. X1: ", x1.sizes.back(), " X2: ", x2.sizes.back());
  AOTISHIM_CHECK(is_floating(x1.dtype), "cdist only supports floating-point dtypes, X1 got: ",
                 dtype_name(x1.dtype));
  AOTISHIM_CHECK(is_floating(x2.dtype), "cdist only supports floating-point dtypes, X2 got: ",
                 dtype_name(x2.dtype));
  AOTISHIM_CHECK(p >= 0, "cdist only supports non-negative p values");
  const int64_t mode = compute_mode ? *compute_mode : 0;
  AOTISHIM_CHECK(mode >= 0 && mode <= 2, "possible modes: 0, 1, 2, but was: ", mode);
  AOTISHIM_CHECK(x1.dtype == x2.dtype, "cdist: X1 and X2 must have the same dtype, but got ",
                 dtype_name(x1.dtype), " and ", dtype_name(x2.dtype));
  AOTISHIM_CHECK(x1.dtype == DType::Float32 || x1.dtype == DType::Float64,
                 "\"cdist\" not implemented for '", dtype_name(x1.dtype),
                 "' (float32 and float64 are)");
  // broadcast the batch dims
  const int64_t b1 = x1.dim() - 2, b2 = x2.dim() - 2, nb = std::max(b1, b2);
  std::vector<int64_t> batch(static_cast<size_t>(nb));
  std::vector<int64_t> s1(static_cast<size_t>(nb) + 2, 0), s2(static_cast<size_t>(nb) + 2, 0);
  for (int64_t i = 0; i < nb; ++i) {
    const int64_t i1 = i - (nb - b1), i2 = i - (nb - b2);
    const int64_t z1 = i1 >= 0 ? x1.sizes[i1] : 1, z2 = i2 >= 0 ? x2.sizes[i2] : 1;
    AOTISHIM_CHECK(z1 == z2 || z1 == 1 || z2 == 1, "The size of tensor a (", z1,
                   ") must match the size of tensor b (", z2, ") at non-singleton dimension ", i);
    batch[i] = z1 == 1 ? z2 : z1;
    if (i1 >= 0 && z1 != 1) s1[i] = x1.strides[i1];
    if (i2 >= 0 && z2 != 1) s2[i] = x2.strides[i2];
  }
  const int64_t r1 = x1.sizes[x1.dim() - 2], r2 = x2.sizes[x2.dim() - 2], m = x1.sizes.back();
  std::vector<int64_t> out_sizes = batch, v1 = batch, v2 = batch;
  out_sizes.insert(out_sizes.end(), {r1, r2});
  v1.insert(v1.end(), {r1, m});
  v2.insert(v2.end(), {r2, m});
  s1[nb] = x1.strides[x1.dim() - 2];
  s1[nb + 1] = x1.strides.back();
  s2[nb] = x2.strides[x2.dim() - 2];
  s2[nb + 1] = x2.strides.back();
  Device& device = x1.device();
  Tensor out = make_empty(device, x1.dtype, out_sizes);
  if (out.numel() > 0) {
    DistanceArgs a;
    a.x1 = make_view(x1, v1, s1, x1.storage_offset);
    a.x2 = make_view(x2, v2, s2, x2.storage_offset);
    a.out = out;
    a.p = p;
    a.euclid_mm = m > 0 && p == 2 && (mode == 1 || (mode == 0 && (r1 > 25 || r2 > 25)));
    distance_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
}

void _pdist_forward(const OpCall& call, AtenTensorHandle self_h, double p, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: ", self.dim(), "D");
  AOTISHIM_CHECK(is_floating(self.dtype), "pdist only supports floating-point dtypes");
  AOTISHIM_CHECK(p >= 0, "pdist only supports non-negative p values");
  AOTISHIM_CHECK(self.dtype == DType::Float32 || self.dtype == DType::Float64,
                 "\"pdist\" not implemented for '", dtype_name(self.dtype),
                 "' (float32 and float64 are)");
  const int64_t n = self.sizes[0];
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, {n > 1 ? n * (n - 1) / 2 : 0});
  if (out.numel() > 0) {
    DistanceArgs a;
    a.x1 = self;
    a.out = out;
    a.p = p;
    a.pairwise = true;
    distance_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
