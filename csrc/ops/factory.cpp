#include "ops/factory.h"

#include "core/device_type.h"
#include "core/error.h"

namespace aotishim {
namespace ops {

void check_sizes(const OpCall& call, const int64_t* size, int64_t size_len) {
  AOTISHIM_CHECK(size_len >= 0 && (size_len == 0 || size != nullptr), call.op,
                 ": invalid size list");
  for (int64_t i = 0; i < size_len; ++i)
    AOTISHIM_CHECK(size[i] >= 0, call.op, ": negative dimension ", size[i], " in size");
}

void check_layout_and_pinning(const OpCall& call, const int32_t* layout,
                              const int32_t* pin_memory) {
  AOTISHIM_CHECK(layout == nullptr || *layout == 0, call.op, ": only the strided layout is "
                 "supported, got layout ", layout ? *layout : 0);
  AOTISHIM_CHECK(pin_memory == nullptr || *pin_memory == 0, call.op,
                 ": pinned memory is not supported");
}

Device& factory_device(const OpCall& call, const int32_t* device, int32_t device_index) {
  DeviceType type = call.device.value_or(DeviceType::CPU);
  int32_t index = 0;
  if (device != nullptr) {
    const DeviceType named = device_type_from_int(*device);
    AOTISHIM_CHECK(!call.device || named == *call.device, call.op, ": device ",
                   device_type_name(named), " given to an entry point that runs on ",
                   device_type_name(*call.device));
    type = named;
    index = device_index < 0 ? 0 : device_index;
  }
  return get_device(type, index);
}

}  // namespace ops
}  // namespace aotishim
