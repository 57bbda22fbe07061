// kthvalue / median / nanmedian / mode validation with torch's rules and
// messages: dims wrapped, k in range, a reduced dim must not be empty (a
// whole-tensor median of nothing is NaN), outputs contiguous, keepdim by a
// view that drops the reduced dim.
#include "ops/order_statistics.h"

#include <limits>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

void check_orderable(const Tensor& self, const char* op, bool bool_ok) {
  AOTISHIM_CHECK(!is_complex(self.dtype) && (bool_ok || self.dtype != DType::Bool), op,
                 ": ", dtype_name(self.dtype), " tensors are not supported");
}

// Runs `kind` over every line of self along dim; values / indices returned in
// keepdim form or with dim dropped.
void select_along(const ops::OpCall& call, const Tensor& self, int64_t dim, int32_t keepdim,
                  SelectKind kind, int64_t k, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  SelectArgs args;
  args.self = self;
  args.kind = kind;
  args.k = k;
  args.dim = ops::wrap_dim(dim, self.dim(), call.op);
  const int64_t n = ops::size_at(self.sizes, args.dim);
  if (kind == SelectKind::Kth) {
    AOTISHIM_CHECK(k >= 1 && k <= n, call.op, "(): selected number k out of range for dimension ",
                   args.dim);
  }
  std::vector<int64_t> kept = self.sizes;
  if (!kept.empty()) kept[args.dim] = 1;
  Device& device = self.device();
  args.values = make_empty(device, self.dtype, kept);
  args.indices = make_empty(device, DType::Int64, kept);
  if (args.values.numel() > 0) {
    AOTISHIM_CHECK(n > 0, call.op, "(): Expected reduction dim ", args.dim,
                   " to have non-zero size.");
    ops::select_kernel.run(device, args);
  }
  Tensor values = args.values, indices = args.indices;
  if (!keepdim && !kept.empty()) {
    std::vector<int64_t> sizes = kept, strides = values.strides;
    sizes.erase(sizes.begin() + args.dim);
    strides.erase(strides.begin() + args.dim);
    values = make_view(values, sizes, strides, values.storage_offset);
    indices = make_view(indices, sizes, strides, indices.storage_offset);
  }
  *ret0 = register_tensor(values);
  *ret1 = register_tensor(indices);
}

// median(self) / nanmedian(self): one 0-d value over every element.
void select_all(const ops::OpCall& call, AtenTensorHandle self_h, SelectKind kind,
                AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  check_orderable(self, call.op, false);
  SelectArgs args;
  args.self = self;
  args.kind = kind;
  args.dim = -1;
  args.values = make_empty(self.device(), self.dtype, {});
  if (self.numel() > 0) {
    ops::select_kernel.run(self.device(), args);
  } else {
    // torch: the median of nothing is NaN (integer dtypes get an arbitrary
    // number from torch: refused here)
    AOTISHIM_CHECK(is_floating(self.dtype), call.op, "(): the median of an empty ",
                   dtype_name(self.dtype), " tensor is undefined");
    Tensor nan = make_empty(get_device(DeviceType::CPU), DType::Float64, {});
    *reinterpret_cast<double*>(nan.data()) = std::numeric_limits<double>::quiet_NaN();
    copy_tensor(args.values, nan);
  }
  *ret0 = register_tensor(args.values);
}

}  // namespace

namespace ops {

Op<void(const SelectArgs&)> select_kernel("order statistics");

void kthvalue(const OpCall& call, AtenTensorHandle self_h, int64_t k, int64_t dim,
              int32_t keepdim, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  auto self_p = call.tensor(self_h, "self");
  check_orderable(*self_p, "kthvalue", false);
  select_along(call, *self_p, dim, keepdim, SelectKind::Kth, k, ret0, ret1);
}

void mode(const OpCall& call, AtenTensorHandle self_h, int64_t dim, int32_t keepdim,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  auto self_p = call.tensor(self_h, "self");
  check_orderable(*self_p, "mode", true);
  select_along(call, *self_p, dim, keepdim, SelectKind::Mode, 0, ret0, ret1);
}

void median(const OpCall& call, AtenTensorHandle self, AtenTensorHandle* ret0) {
  select_all(call, self, SelectKind::Median, ret0);
}

void nanmedian(const OpCall& call, AtenTensorHandle self, AtenTensorHandle* ret0) {
  select_all(call, self, SelectKind::NanMedian, ret0);
}

}  // namespace ops
}  // namespace aotishim
