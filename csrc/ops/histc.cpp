// histc validation: a floating self and a positive bin count, as torch's CPU
// histc requires; the range itself may depend on the data, so the kernel
// settles it.
#include "ops/histc.h"

#include <cmath>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const HistcArgs&)> histc_kernel("histc");

void histc(const OpCall& call, AtenTensorHandle self_h, int64_t bins, double min, double max,
           AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(is_floating(self.dtype), call.op, ": self must be floating point, got ",
                 dtype_name(self.dtype));
  AOTISHIM_CHECK(bins > 0, call.op, ": bins must be > 0, but got ", bins);
  AOTISHIM_CHECK(!std::isnan(min) && !std::isnan(max), call.op, ": min and max must not be NaN");
  AOTISHIM_CHECK(min <= max, call.op, ": max must be larger than min (min ", min, ", max ", max,
                 ")");
  HistcArgs args;
  args.self = self;
  args.bins = bins;
  args.min = min;
  args.max = max;
  args.out = make_empty(self.device(), self.dtype, {bins});
  histc_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
