// index_put validation (the functional op: a clone of self, laid out as
// torch's clone, then written): torch's index rules through index.Tensor's
// plan, values of self's dtype broadcast to the indexing result's shape.
#include "ops/index_put.h"

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/promotion.h"
#include "ops/tensor_iterator.h"

namespace aotishim {
namespace ops {

Op<void(const IndexPutArgs&)> index_put_kernel("index_put");

void index_put(const OpCall& call, AtenTensorHandle self_h, const AtenTensorHandle** indices,
               int64_t indices_len_, AtenTensorHandle values_h, int32_t accumulate,
               AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  auto values_p = call.tensor(values_h, "values");
  const Tensor &self = *self_p, &values = *values_p;
  AOTISHIM_CHECK(values.dtype == self.dtype, "Index put requires the source and destination "
                 "dtypes match, got ", c10_name(self.dtype), " for the destination and ",
                 c10_name(values.dtype), " for the source.");
  AOTISHIM_CHECK(&values.device() == &self.device(), "index_put: values are on ",
                 values.device().name(), " but self is on ", self.device().name());
  AOTISHIM_CHECK(!(accumulate && is_complex(self.dtype)),
                 "index_put: accumulating complex tensors is not supported");
  Tensor out = clone_preserving_layout(self);
  IndexPutArgs args;
  args.plan = plan_index(call, out, indices, indices_len_);
  const std::vector<int64_t>& shape = args.plan.sizes;
  // values broadcast to the result's shape (trailing dims aligned)
  bool fits = values.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t i = 0; fits && i < values.dim(); ++i) {
    const int64_t v = values.sizes[values.dim() - 1 - i];
    const int64_t s = shape[shape.size() - 1 - i];
    fits = v == s || v == 1;
  }
  AOTISHIM_CHECK(fits, "shape mismatch: value tensor of shape ", shape_string(values.sizes),
                 " cannot be broadcast to indexing result of shape ", shape_string(shape));
  args.target = out;
  args.values = values;
  args.values.strides = broadcast_strides(values, shape);
  args.values.sizes = shape;
  args.accumulate = accumulate != 0;
  int64_t count = 1;
  for (int64_t s : shape) count *= s;
  if (count > 0) {
    // values may share memory with self, never with the fresh clone; the
    // indices are read before anything is written.
    index_put_kernel.run(out.device(), args);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
