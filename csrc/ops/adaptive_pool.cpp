// Adaptive 3-D pooling validation with torch's messages: a 4-D (C, D, H, W)
// or 5-D (N, C, D, H, W) floating self whose non-batch dims are not empty,
// three output sizes; outputs contiguous, as torch's CPU kernels give them.
#include "ops/adaptive_pool.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

void adaptive_pool3d(const ops::OpCall& call, AtenTensorHandle self_h, const int64_t* output_size,
                     int64_t output_size_len, bool max, AtenTensorHandle* ret0,
                     AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  if (max) require_out(ret1, "ret1");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(output_size_len == 3 && output_size != nullptr, call.op,
                 ": internal error: output_size.size() must be 3");
  AOTISHIM_CHECK(self.dim() == 4 || self.dim() == 5, call.op,
                 ": Expected 4D or 5D tensor, but got ", shape_string(self.sizes));
  for (int64_t d = self.dim() - 4; d < self.dim(); ++d)
    AOTISHIM_CHECK(self.sizes[d] > 0, call.op, ": Expected input to have non-zero size for "
                   "non-batch dimensions, but input has sizes ", shape_string(self.sizes),
                   " with dimension ", d, " being empty");
  for (int64_t i = 0; i < 3; ++i)
    AOTISHIM_CHECK(output_size[i] >= 0, call.op, ": elements of output_size must be greater "
                   "than or equal to 0 but received ", output_size[i]);
  AOTISHIM_CHECK(is_floating(self.dtype), call.op, ": ", dtype_name(self.dtype),
                 " is not supported (the floating types are)");
  std::vector<int64_t> out_sizes(self.sizes.begin(), self.sizes.end() - 3);
  out_sizes.insert(out_sizes.end(), output_size, output_size + 3);
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, out_sizes);
  Tensor indices = max ? make_empty(device, DType::Int64, out_sizes) : Tensor{};
  if (out.numel() > 0) {
    AdaptivePoolArgs args;
    args.max = max;
    args.self = self;
    args.out = out;
    args.indices = indices;
    if (self.dim() == 4) {  // one leading dim of size 1 for a (C, D, H, W) self
      auto lift = [](const Tensor& t) {
        std::vector<int64_t> sizes = t.sizes, strides = t.strides;
        sizes.insert(sizes.begin(), 1);
        strides.insert(strides.begin(), 0);
        return make_view(t, sizes, strides, t.storage_offset);
      };
      args.self = lift(self);
      args.out = lift(out);
      if (max) args.indices = lift(indices);
    }
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
  adaptive_pool3d(call, self, output_size, output_size_len_, false, ret0, nullptr);
}

void adaptive_max_pool3d(const OpCall& call, AtenTensorHandle self, const int64_t* output_size,
                         int64_t output_size_len_, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  adaptive_pool3d(call, self, output_size, output_size_len_, true, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
