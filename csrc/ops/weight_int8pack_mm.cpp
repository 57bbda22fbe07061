// _weight_int8pack_mm validation: torch's shape and dtype rules (it refuses
// float64 activations and anything but int8 weights), then the device's
// kernel. torch also asks for unit-stride rows; any strides work here.
#include "ops/weight_int8pack_mm.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const WeightInt8PackMmArgs&)> weight_int8pack_mm_kernel("_weight_int8pack_mm");

void _weight_int8pack_mm(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mat2_h,
                         AtenTensorHandle scales_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self"), mat2_p = call.tensor(mat2_h, "mat2");
  auto scales_p = call.tensor(scales_h, "scales");
  const Tensor &self = *self_p, &mat2 = *mat2_p, &scales = *scales_p;
  for (const Tensor* t : {&mat2, &scales})
    AOTISHIM_CHECK(&t->device() == &self.device(), call.op, ": tensors are on different devices (",
                   self.device().name(), " and ", t->device().name(), ")");
  AOTISHIM_CHECK(self.dtype == DType::Float32 || self.dtype == DType::BFloat16 ||
                     self.dtype == DType::Float16,
                 call.op, ": self must be float32, bfloat16 or float16, got ",
                 dtype_name(self.dtype));
  AOTISHIM_CHECK(mat2.dtype == DType::Int8, call.op, ": mat2 must be int8, got ",
                 dtype_name(mat2.dtype));
  AOTISHIM_CHECK(scales.dtype == self.dtype, call.op, ": scales must have self's dtype (",
                 dtype_name(self.dtype), "), got ", dtype_name(scales.dtype));
  AOTISHIM_CHECK(self.dim() == 2 && mat2.dim() == 2, call.op,
                 ": self and mat2 must be 2-D, got sizes ", shape_string(self.sizes), " and ",
                 shape_string(mat2.sizes));
  const int64_t M = self.sizes[0], K = self.sizes[1], N = mat2.sizes[0];
  AOTISHIM_CHECK(mat2.sizes[1] == K, call.op, ": self ", shape_string(self.sizes), " and mat2 ",
                 shape_string(mat2.sizes), " (out_features, in_features) differ in K");
  AOTISHIM_CHECK(scales.dim() == 1 && scales.sizes[0] == N, call.op,
                 ": scales must be 1-D with ", N, " elements, got sizes ",
                 shape_string(scales.sizes));

  WeightInt8PackMmArgs args;
  args.self = self;
  args.mat2 = mat2;
  args.scales = scales;
  args.out = make_empty(self.device(), self.dtype, {M, N});
  if (args.out.numel() > 0) weight_int8pack_mm_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
