// AtenTensorHandle <-> Python int, and the C-ABI error check.
#pragma once

#include <cstdint>

#include "aotishim/c_shim.h"
#include "aotishim/runtime.h"

namespace aotishim::python {

inline AtenTensorHandle to_handle(uintptr_t value) {
  return reinterpret_cast<AtenTensorHandle>(value);
}
inline uintptr_t from_handle(AtenTensorHandle handle) {
  return reinterpret_cast<uintptr_t>(handle);
}

}  // namespace aotishim::python
