// _efficientzerotensor: torch's zero tensor that owns no memory (a ZeroTensor
// dispatch key) is, through this ABI, a plain contiguous tensor of zeros:
// generated code may only read it, and reads see the same values.
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/factory.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

void _efficientzerotensor(const OpCall& call, const int64_t* size, int64_t size_len_,
                          int32_t* dtype, int32_t* layout, int32_t* device,
                          int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  check_sizes(call, size, size_len_);
  check_layout_and_pinning(call, layout, pin_memory);
  Device& d = factory_device(call, device, device_index_);
  const DType t = dtype == nullptr ? DType::Float32 : dtype_from_int(*dtype);
  Tensor out = make_empty(d, t, std::vector<int64_t>(size, size + size_len_));
  if (out.numel() > 0) d.fill_zero(out);
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
