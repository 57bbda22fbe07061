// _fused_rms_norm validation: the normalized shape against the input's
// trailing dims and the weight's shape, the outputs as torch shapes them
// (rstd keeps the leading dims, 1 for each normalized one), eps defaulting to
// the compute type's epsilon, then the device's kernel.
#include "ops/rms_norm.h"

#include <limits>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const RmsNormArgs&)> fused_rms_norm_kernel("_fused_rms_norm");

namespace {
bool real_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16 ||
         d == DType::Float16;
}
}  // namespace

void _fused_rms_norm(const OpCall& call, AtenTensorHandle input_h, const int64_t* normalized_shape,
                     int64_t normalized_shape_len_, AtenTensorHandle* weight_h, double* eps,
                     AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto input_p = call.tensor(input_h, "input");
  const Tensor& input = *input_p;
  std::shared_ptr<Tensor> weight_p =
      weight_h != nullptr ? call.optional_tensor(*weight_h, "weight") : nullptr;
  AOTISHIM_CHECK(normalized_shape_len_ >= 1 && (normalized_shape != nullptr),
                 "Expected normalized_shape to be at least 1-dimensional, i.e., containing at "
                 "least one element, but got normalized_shape = []");
  const std::vector<int64_t> norm(normalized_shape, normalized_shape + normalized_shape_len_);
  const int64_t nd = input.dim(), k = normalized_shape_len_;
  bool fits = nd >= k;
  for (int64_t i = 0; fits && i < k; ++i) fits = input.sizes[nd - k + i] == norm[i];
  AOTISHIM_CHECK(fits, "Given normalized_shape=", shape_string(norm),
                 ", expected input with shape [*, ", shape_string(norm).substr(1),
                 ", but got input of size", shape_string(input.sizes));
  AOTISHIM_CHECK(real_floating(input.dtype), call.op, ": unsupported dtype ",
                 dtype_name(input.dtype), " (float32, float64, bfloat16 and float16)");
  int64_t n = 1;
  for (int64_t s : norm) n *= s;
  RmsNormArgs args;
  if (weight_p) {
    const Tensor& w = *weight_p;
    AOTISHIM_CHECK(&w.device() == &input.device(), call.op,
                   ": tensors are on different devices (", input.device().name(), " and ",
                   w.device().name(), ")");
    AOTISHIM_CHECK(w.sizes == norm, "Expected weight to be of same shape as normalized_shape, "
                   "but got weight of shape ", shape_string(w.sizes), " and normalized_shape = ",
                   shape_string(norm));
    AOTISHIM_CHECK(real_floating(w.dtype), call.op, ": unsupported weight dtype ",
                   dtype_name(w.dtype));
    args.weight = w;
  }
  const bool wide = input.dtype == DType::Float64;
  args.eps = eps != nullptr ? *eps
             : wide         ? std::numeric_limits<double>::epsilon()
                            : static_cast<double>(std::numeric_limits<float>::epsilon());
  args.n = n;
  args.input = input;
  args.out = make_empty(input.device(), input.dtype, input.sizes);
  std::vector<int64_t> rstd_sizes = input.sizes;
  for (int64_t i = nd - k; i < nd; ++i) rstd_sizes[i] = 1;
  args.rstd = make_empty(input.device(), wide ? DType::Float64 : DType::Float32, rstd_sizes);
  if (args.rstd.numel() > 0) fused_rms_norm_kernel.run(input.device(), args);
  *ret0 = register_tensor(args.out);
  *ret1 = register_tensor(args.rstd);
}

}  // namespace ops
}  // namespace aotishim
