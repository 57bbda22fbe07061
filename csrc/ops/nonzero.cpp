#include "ops/nonzero.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(NonzeroArgs&)> nonzero_kernel("nonzero");

void nonzero(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  NonzeroArgs args;
  args.self = *self_p;
  nonzero_kernel.run(args.self.device(), args);
  AOTISHIM_CHECK(args.out.storage != nullptr, "nonzero: the kernel for ",
                 args.self.device().name(), " produced no result");
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
