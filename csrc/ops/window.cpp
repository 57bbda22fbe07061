// hann_window validation as torch's: a non-negative length and a floating
// dtype (float32 by default); lengths 0 and 1 are empty and [1].
#include "ops/window.h"

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/factory.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const WindowArgs&)> hann_window_kernel("hann_window");

void hann_window(const OpCall& call, int64_t window_length, int32_t* dtype, int32_t* layout,
                 int32_t* device, int32_t device_index_, int32_t* pin_memory,
                 AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  check_layout_and_pinning(call, layout, pin_memory);
  const DType t = dtype == nullptr ? DType::Float32 : dtype_from_int(*dtype);
  AOTISHIM_CHECK(is_floating(t), "hann_window expects floating point dtypes, got: ",
                 dtype_name(t));
  AOTISHIM_CHECK(window_length >= 0,
                 "hann_window requires non-negative window_length, got window_length=",
                 window_length);
  Device& d = factory_device(call, device, device_index_);
  WindowArgs args;
  args.out = make_empty(d, t, {window_length});
  if (window_length == 1) {  // torch's ones(1)
    Tensor host = make_empty(get_device(DeviceType::CPU), DType::Float64, {1});
    *reinterpret_cast<double*>(host.data()) = 1.0;
    copy_tensor(args.out, host);
  } else if (window_length > 1) {
    args.n = window_length + 1;  // periodic: the window of n + 1, less its last
    hann_window_kernel.run(d, args);
  }
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
