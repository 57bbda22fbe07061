// Argument checks of the device-specific op shims (aoti_torch_cpu_*,
// aoti_torch_cuda_*): their names promise tensors of one device type.
#pragma once

#include <initializer_list>
#include <utility>

#include "aotishim/export.h"
#include "core/device_type.h"
#include "core/tensor.h"

namespace aotishim {

// Throws unless every tensor is on a device of `type`; checked in argument
// order, so the message names the first offender and the device it is on.
AOTISHIM_API void require_device(DeviceType type,
                                 std::initializer_list<std::pair<const char*, const Tensor*>> args);

}  // namespace aotishim
