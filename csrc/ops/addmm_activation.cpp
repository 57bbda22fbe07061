// _addmm_activation validation: addmm's shape and dtype rules (self
// broadcast to (M, N)), the product through the device's gemm kernel into a
// fresh contiguous result, then the device's activation epilogue.
#include "ops/addmm_activation.h"

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/gemm.h"

namespace aotishim {
namespace ops {

Op<void(const ActivationArgs&)> addmm_activation_epilogue("_addmm_activation");

void _addmm_activation(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mat1_h,
                       AtenTensorHandle mat2_h, double beta, double alpha, int32_t use_gelu,
                       AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self"), mat1_p = call.tensor(mat1_h, "mat1");
  auto mat2_p = call.tensor(mat2_h, "mat2");
  const Tensor &self = *self_p, &mat1 = *mat1_p, &mat2 = *mat2_p;
  for (const Tensor* t : {&mat1, &mat2})
    AOTISHIM_CHECK(&t->device() == &self.device(), call.op, ": tensors are on different devices (",
                   self.device().name(), " and ", t->device().name(), ")");
  AOTISHIM_CHECK(mat1.dim() == 2, "mat1 must be a matrix, got ", mat1.dim(), "-D tensor");
  AOTISHIM_CHECK(mat2.dim() == 2, "mat2 must be a matrix, got ", mat2.dim(), "-D tensor");
  AOTISHIM_CHECK(mat1.sizes[1] == mat2.sizes[0], "mat1 and mat2 shapes cannot be multiplied (",
                 mat1.sizes[0], "x", mat1.sizes[1], " and ", mat2.sizes[0], "x", mat2.sizes[1], ")");
  AOTISHIM_CHECK(mat1.dtype == mat2.dtype && mat1.dtype == self.dtype,
                 "expected mat1 and mat2 to have the same dtype, but got: ", dtype_name(mat1.dtype),
                 " != ", dtype_name(mat2.dtype), " (self: ", dtype_name(self.dtype), ")");
  const DType dt = self.dtype;
  AOTISHIM_CHECK(dt == DType::Float32 || dt == DType::Float64 || dt == DType::BFloat16 ||
                     dt == DType::Float16,
                 call.op, ": unsupported dtype ", dtype_name(dt),
                 " (float32, float64, bfloat16 and float16)");
  const int64_t M = mat1.sizes[0], K = mat1.sizes[1], N = mat2.sizes[1];
  AOTISHIM_CHECK(self.dim() <= 2, call.op, ": self of sizes ", shape_string(self.sizes),
                 " cannot be broadcast to ", shape_string({M, N}));
  const Tensor bias = broadcast_to(self, {M, N});  // validated even when beta == 0
  Tensor out = make_empty(self.device(), dt, {M, N});
  if (out.numel() > 0) {
    if (beta != 0.0) copy_tensor(out, bias);
    GemmArgs g;
    g.out = make_view(out, {1, M, N}, {0, N, 1}, 0);
    g.a = make_view(mat1, {1, M, K}, {0, mat1.strides[0], mat1.strides[1]}, mat1.storage_offset);
    g.b = make_view(mat2, {1, K, N}, {0, mat2.strides[0], mat2.strides[1]}, mat2.storage_offset);
    g.alpha = alpha;
    g.beta = beta;
    gemm.run(self.device(), g);
    ActivationArgs act;
    act.out = out;
    act.gelu = use_gelu != 0;
    addmm_activation_epilogue.run(self.device(), act);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
