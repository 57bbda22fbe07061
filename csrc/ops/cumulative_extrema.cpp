// cummax / cummin validation: dims as torch wraps them, every real dtype and
// bool, outputs contiguous in self's sizes.
#include "ops/cumulative_extrema.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

void running_extremum(const ops::OpCall& call, AtenTensorHandle self_h, int64_t dim, bool maximum,
                      AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(!is_complex(self.dtype), call.op, ": ", dtype_name(self.dtype),
                 " tensors are not supported");
  CumulativeExtremumArgs args;
  args.dim = ops::wrap_dim(dim, self.dim(), call.op);
  args.maximum = maximum;
  Device& device = self.device();
  Tensor values = make_empty(device, self.dtype, self.sizes);
  Tensor indices = make_empty(device, DType::Int64, self.sizes);
  if (values.numel() > 0) {
    args.self = self;
    args.values = values;
    args.indices = indices;
    if (self.dim() == 0) {  // one element: the kernel sees shape [1]
      args.self = make_view(self, {1}, {1}, self.storage_offset);
      args.values = make_view(values, {1}, {1}, values.storage_offset);
      args.indices = make_view(indices, {1}, {1}, indices.storage_offset);
    }
    ops::cumulative_extremum.run(device, args);
  }
  *ret0 = register_tensor(values);
  *ret1 = register_tensor(indices);
}

}  // namespace

namespace ops {

Op<void(const CumulativeExtremumArgs&)> cumulative_extremum("cumulative extremum");

void cummax(const OpCall& call, AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
            AtenTensorHandle* ret1) {
  running_extremum(call, self, dim, true, ret0, ret1);
}

void cummin(const OpCall& call, AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0,
            AtenTensorHandle* ret1) {
  running_extremum(call, self, dim, false, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
