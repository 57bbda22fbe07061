// _int_mm_out validation: torch's dtypes and shapes (int8 operands, an int32
// out of the product's sizes), then the device's kernel.
#include "ops/int_mm.h"

#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const IntMmArgs&)> int_mm_kernel("_int_mm");

void _int_mm_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
                 AtenTensorHandle mat2_h) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto mat2_p = call.tensor(mat2_h, "mat2");
  const Tensor &out = *out_p, &self = *self_p, &mat2 = *mat2_p;
  for (const Tensor* t : {&self, &mat2})
    AOTISHIM_CHECK(&t->device() == &out.device(), call.op, ": tensors are on different devices (",
                   out.device().name(), " and ", t->device().name(), ")");
  AOTISHIM_CHECK(self.dtype == DType::Int8 && mat2.dtype == DType::Int8, call.op,
                 ": self and mat2 must be int8, got ", dtype_name(self.dtype), " and ",
                 dtype_name(mat2.dtype));
  AOTISHIM_CHECK(out.dtype == DType::Int32, call.op, ": out must be int32, got ",
                 dtype_name(out.dtype));
  AOTISHIM_CHECK(self.dim() == 2 && mat2.dim() == 2 && out.dim() == 2, call.op,
                 ": self, mat2 and out must be 2-D, got sizes ", shape_string(self.sizes), ", ",
                 shape_string(mat2.sizes), " and ", shape_string(out.sizes));
  AOTISHIM_CHECK(self.sizes[1] == mat2.sizes[0], call.op, ": self.size(1) needs to match "
                 "mat2.size(0) but got ", self.sizes[1], " and ", mat2.sizes[0]);
  AOTISHIM_CHECK(out.sizes == (std::vector<int64_t>{self.sizes[0], mat2.sizes[1]}), call.op,
                 ": out has sizes ", shape_string(out.sizes), " but the result has sizes ",
                 shape_string({self.sizes[0], mat2.sizes[1]}));
  check_writable_without_overlap(out, "out");
  AOTISHIM_CHECK(!may_overlap(out, self) && !may_overlap(out, mat2), call.op,
                 ": out overlaps an input");
  if (out.numel() > 0) int_mm_kernel.run(out.device(), IntMmArgs{out, self, mat2});
}

}  // namespace ops
}  // namespace aotishim
