#include "ops/masked_select.h"

#include <algorithm>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(MaskedSelectArgs&)> masked_select_kernel("masked_select");

namespace {

// torch's broadcast of two shapes: trailing dimensions aligned, a size of 1
// (or a missing dimension) stretches to the other's.
std::vector<int64_t> broadcast_shape(const char* op, const Tensor& a, const Tensor& b) {
  const size_t nd = std::max(a.sizes.size(), b.sizes.size());
  std::vector<int64_t> out(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t x = i < nd - a.sizes.size() ? 1 : a.sizes[i - (nd - a.sizes.size())];
    const int64_t y = i < nd - b.sizes.size() ? 1 : b.sizes[i - (nd - b.sizes.size())];
    AOTISHIM_CHECK(x == y || x == 1 || y == 1, op, ": self of sizes ", shape_string(a.sizes),
                   " and mask of sizes ", shape_string(b.sizes),
                   " cannot be broadcast together (dimension ", i, ": ", x, " vs ", y, ")");
    out[i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace

void masked_select(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mask_h,
                   AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  auto mask_p = call.tensor(mask_h, "mask");
  const Tensor& self = *self_p;
  const Tensor& mask = *mask_p;
  // torch refuses uint8 masks too ("expected BoolTensor for mask").
  AOTISHIM_CHECK(mask.dtype == DType::Bool, call.op, ": mask must be bool, got ",
                 dtype_name(mask.dtype));
  AOTISHIM_CHECK(&mask.device() == &self.device(), call.op, ": self is on ",
                 self.device().name(), " but mask on ", mask.device().name());
  const std::vector<int64_t> shape = broadcast_shape(call.op, self, mask);

  MaskedSelectArgs args;
  args.self = broadcast_to(self, shape);
  args.mask = broadcast_to(mask, shape);
  masked_select_kernel.run(self.device(), args);
  AOTISHIM_CHECK(args.out.storage != nullptr, call.op, ": the kernel for ", self.device().name(),
                 " produced no result");
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
