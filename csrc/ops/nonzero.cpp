#include "ops/nonzero.h"

#include <algorithm>

#include "core/copy.h"
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

// nonzero_static: nonzero's first `size` rows, padded with fill_value to
// exactly `size` rows (contiguous), built from nonzero's kernel and copies.
void nonzero_static(const OpCall& call, AtenTensorHandle self_h, int64_t size, int64_t fill_value,
                    AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  AOTISHIM_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer, but got ",
                 size);
  NonzeroArgs args;
  args.self = *self_p;
  Device& device = args.self.device();
  const int64_t nd = args.self.dim();
  Tensor out = make_empty(device, DType::Int64, {size, nd});
  if (out.numel() > 0) {
    nonzero_kernel.run(device, args);
    AOTISHIM_CHECK(args.out.storage != nullptr, "nonzero_static: the kernel for ", device.name(),
                   " produced no result");
    const int64_t found = std::min(size, args.out.sizes[0]);
    if (found > 0) {
      copy_tensor(make_view(out, {found, nd}, out.strides, out.storage_offset),
                  make_view(args.out, {found, nd}, args.out.strides, args.out.storage_offset));
    }
    if (found < size) {  // fill_value in the rows nonzero did not reach
      Tensor value = make_empty(get_device(DeviceType::CPU), DType::Int64, {});
      *reinterpret_cast<int64_t*>(value.data()) = fill_value;
      Tensor rest = make_view(out, {size - found, nd}, out.strides, out.storage_offset + found * nd);
      copy_tensor(rest, broadcast_to(value, rest.sizes));
    }
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
