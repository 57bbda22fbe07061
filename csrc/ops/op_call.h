// How a fallback op's entry point reaches its validation: the op's ABI name
// and the device type its entry promises (aoti_torch_cuda_* promises cuda
// tensors; the device-generic aotishim_* entries promise nothing).
#pragma once

#include <memory>
#include <optional>

#include "aotishim/c_shim.h"
#include "core/device_type.h"
#include "core/tensor.h"

namespace aotishim {
namespace ops {

struct OpCall {
  const char* op;                     // "mm_out"
  std::optional<DeviceType> device;   // what the entry's name promises

  // The live tensor behind a handle, on the promised device; `what` names the
  // argument in errors ("out is on sim:0, but aoti_torch_cpu_mm_out runs on
  // the cpu device").
  std::shared_ptr<Tensor> tensor(AtenTensorHandle handle, const char* what) const;
  // The same for an optional tensor argument (a null handle is "absent").
  std::shared_ptr<Tensor> optional_tensor(AtenTensorHandle handle, const char* what) const;
};

}  // namespace ops
}  // namespace aotishim
