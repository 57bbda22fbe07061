// Adaptive pooling validation with torch's messages: 2-D pools take a 3-D
// (C, H, W) or 4-D (N, C, H, W) floating self, 3-D pools a 4-D or 5-D one;
// an output size per spatial dim. Outputs as torch's CPU kernels lay them
// out: the 2-D pools follow a channels-last input, the 3-D ones are always
// contiguous.
#include "ops/adaptive_pool.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/pool_geometry.h"

namespace aotishim {
namespace {

void adaptive_pool(const ops::OpCall& call, int64_t spatial, AtenTensorHandle self_h,
                   const int64_t* output_size, int64_t output_size_len, bool max,
                   AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  if (max) require_out(ret1, "ret1");
  const char* name = spatial == 2 ? (max ? "adaptive_max_pool2d()" : "adaptive_avg_pool2d()")
                                  : call.op;
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  if (spatial == 2 && !max)
    AOTISHIM_CHECK(output_size_len == 2 && output_size != nullptr,
                   "adaptive_avg_pool2d: output_size must be 2");
  else
    AOTISHIM_CHECK(output_size_len == spatial && output_size != nullptr, name,
                   ": internal error: output_size.size() must be ", spatial);
  AOTISHIM_CHECK(self.dim() == spatial + 1 || self.dim() == spatial + 2, name, ": Expected ",
                 spatial + 1, "D or ", spatial + 2, "D tensor, but got ", shape_string(self.sizes));
  // torch's average 2-D pool allows no channels; the others need every
  // non-batch dim
  const int64_t first = (spatial == 2 && !max) ? self.dim() - 2 : self.dim() - spatial - 1;
  for (int64_t d = first; d < self.dim(); ++d)
    AOTISHIM_CHECK(self.sizes[d] > 0, name, ": Expected input to have non-zero size for "
                   "non-batch dimensions, but input has sizes ", shape_string(self.sizes),
                   " with dimension ", d, " being empty");
  for (int64_t i = 0; i < spatial; ++i)
    AOTISHIM_CHECK(output_size[i] >= 0, name, ": elements of output_size must be greater "
                   "than or equal to 0 but received ", output_size[i]);
  AOTISHIM_CHECK(is_floating(self.dtype), name, ": ", dtype_name(self.dtype),
                 " is not supported (the floating types are)");
  std::vector<int64_t> out_sizes(self.sizes.begin(), self.sizes.end() - spatial);
  out_sizes.insert(out_sizes.end(), output_size, output_size + spatial);
  const std::vector<int64_t> strides =
      spatial == 2 ? pool_output_strides(self, spatial, out_sizes) : contiguous_strides(out_sizes);
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, out_sizes, strides);
  Tensor indices = max ? make_empty(device, DType::Int64, out_sizes, strides) : Tensor{};
  if (out.numel() > 0) {
    AdaptivePoolArgs args;
    args.max = max;
    args.divide_once = strides != contiguous_strides(out_sizes);  // torch's channels-last kernel
    args.self = pool_view_5d(self, spatial);
    args.out = pool_view_5d(out, spatial);
    if (max) args.indices = pool_view_5d(indices, spatial);
    ops::adaptive_pool_kernel.run(device, args);
  }
  *ret0 = register_tensor(out);
  if (max) *ret1 = register_tensor(indices);
}

}  // namespace

namespace ops {

Op<void(const AdaptivePoolArgs&)> adaptive_pool_kernel("adaptive pooling");

void _adaptive_avg_pool3d(const OpCall& call, AtenTensorHandle self, const int64_t* output_size,
                          int64_t output_size_len_, AtenTensorHandle* ret0) {
  adaptive_pool(call, 3, self, output_size, output_size_len_, false, ret0, nullptr);
}

void adaptive_max_pool3d(const OpCall& call, AtenTensorHandle self, const int64_t* output_size,
                         int64_t output_size_len_, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  adaptive_pool(call, 3, self, output_size, output_size_len_, true, ret0, ret1);
}

void _adaptive_avg_pool2d(const OpCall& call, AtenTensorHandle self, const int64_t* output_size,
                          int64_t output_size_len_, AtenTensorHandle* ret0) {
  adaptive_pool(call, 2, self, output_size, output_size_len_, false, ret0, nullptr);
}

void adaptive_max_pool2d(const OpCall& call, AtenTensorHandle self, const int64_t* output_size,
                         int64_t output_size_len_, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  adaptive_pool(call, 2, self, output_size, output_size_len_, true, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
