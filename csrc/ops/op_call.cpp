#include "ops/op_call.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"

namespace aotishim {
namespace ops {

std::shared_ptr<Tensor> OpCall::tensor(AtenTensorHandle handle, const char* what) const {
  std::shared_ptr<Tensor> t = lookup(handle, what);
  if (device) {
    AOTISHIM_CHECK(t->device().type() == *device, what, " is on ", t->device().name(),
                   ", but this op runs on the ", device_type_name(*device), " device; use the device-generic entry point or a ",
                   device_type_name(*device), " tensor");
  }
  return t;
}

std::shared_ptr<Tensor> OpCall::optional_tensor(AtenTensorHandle handle, const char* what) const {
  if (handle == nullptr) return nullptr;
  return tensor(handle, what);
}

}  // namespace ops
}  // namespace aotishim
