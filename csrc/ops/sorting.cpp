// topk / sort validation: dims as torch wraps them, k in range, outputs
// allocated on self's device in the layout torch gives them (the layout
// AOTInductor's generated code assumes): topk's contiguous, sort's in self's
// own dimension order.
#include "ops/sorting.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/strided.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const TopkArgs&)> topk_kernel("topk");
Op<void(const SortArgs&)> sort_kernel("sort");

void topk(const OpCall& call, AtenTensorHandle self_h, int64_t k, int64_t dim, int32_t largest,
          int32_t sorted, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(self.dtype != DType::Bool, "topk: bool tensors are not supported");
  TopkArgs args;
  args.self = self;
  args.dim = wrap_dim(dim, self.dim(), "topk");
  const int64_t n = size_at(self.sizes, args.dim);
  AOTISHIM_CHECK(k >= 0 && k <= n, "topk: selected index k out of range (k = ", k,
                 ", dimension ", args.dim, " has size ", n, ")");
  args.k = self.dim() == 0 ? 1 : k;  // torch: a 0-d self comes back whole for k = 0 too
  args.largest = largest != 0;
  args.sorted = sorted != 0;
  std::vector<int64_t> out_sizes = self.sizes;
  if (!out_sizes.empty()) out_sizes[args.dim] = k;
  Device& device = self.device();
  args.values = make_empty(device, self.dtype, out_sizes);
  args.indices = make_empty(device, DType::Int64, out_sizes);
  if (args.values.numel() > 0) topk_kernel.run(device, args);
  *ret0 = register_tensor(args.values);
  *ret1 = register_tensor(args.indices);
}

namespace {

void sort_lines(const OpCall& call, AtenTensorHandle self_h, bool stable, int64_t dim,
                int32_t descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  SortArgs args;
  args.self = self;
  args.dim = wrap_dim(dim, self.dim(), "sort");
  args.descending = descending != 0;
  args.stable = stable;
  Device& device = self.device();
  // torch: a dense self's strides exactly (size-1 dims included), else dense
  // strides in self's dimension order; values and indices alike.
  const std::vector<int64_t> strides = self.is_non_overlapping_and_dense()
                                           ? self.strides
                                           : dense_strides_like(self.sizes, self.strides);
  args.values = make_empty(device, self.dtype, self.sizes, strides);
  args.indices = make_empty(device, DType::Int64, self.sizes, strides);
  if (self.numel() > 0) sort_kernel.run(device, args);
  *ret0 = register_tensor(args.values);
  *ret1 = register_tensor(args.indices);
}

}  // namespace

void sort_stable(const OpCall& call, AtenTensorHandle self, int32_t* stable, int64_t dim,
                 int32_t descending, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  sort_lines(call, self, stable != nullptr && *stable != 0, dim, descending, ret0, ret1);
}

// torch.sort without `stable`: the unstable order (ties as torch's CPU gives them).
void sort(const OpCall& call, AtenTensorHandle self, int64_t dim, int32_t descending,
          AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  sort_lines(call, self, false, dim, descending, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
