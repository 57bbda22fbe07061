// index_reduce with torch's checks (a 1-D int32/int64 index, source of
// self's dtype with self's slice shape and one slice per index), lowered onto
// scatter_reduce: index seen at source's sizes (index[p[dim]] at position p)
// is the scatter index that writes slice i of source into slice index[i] of
// the output, with scatter_reduce's identities, NaN rule and mean counts
// (include_self counts self once; integer means floor), and the same order
// of accumulation per element (increasing i). The output is contiguous, as
// torch's.
#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"
#include "ops/promotion.h"
#include "ops/scatter_reduce.h"

#include <string>

namespace aotishim {
namespace ops {

void index_reduce(const OpCall& call, AtenTensorHandle self_h, int64_t dim,
                  AtenTensorHandle index_h, AtenTensorHandle source_h, const char* reduce,
                  int32_t include_self, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  auto index_p = call.tensor(index_h, "index");
  auto source_p = call.tensor(source_h, "source");
  const Tensor &self = *self_p, &index = *index_p, &source = *source_p;
  const std::string r = reduce == nullptr ? "" : reduce;
  ScatterReduceArgs args;
  if (r == "prod") args.reduce = ScatterReduce::Prod;
  else if (r == "mean") args.reduce = ScatterReduce::Mean;
  else if (r == "amax") args.reduce = ScatterReduce::Amax;
  else if (r == "amin") args.reduce = ScatterReduce::Amin;
  else fail(str("index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got ", r, "."));
  args.include_self = include_self != 0;
  const int64_t d = wrap_dim(dim, self.dim(), "index_reduce");
  AOTISHIM_CHECK(index.dim() <= 1, "index_reduce_(): Index is supposed to be a vector");
  AOTISHIM_CHECK(index.dtype == DType::Int64 || index.dtype == DType::Int32,
                 "index_reduce_(): Expected dtype int32/int64 for index");
  AOTISHIM_CHECK(self.dtype == source.dtype, "index_reduce_(): self (", c10_name(self.dtype),
                 ") and source (", c10_name(source.dtype), ") must have the same scalar type");
  const int64_t n = index.numel();
  // source: self's shape with n slices along dim (0-d self: a 0-d or 1-element source)
  bool same_slices = source.dim() == self.dim() || (self.dim() == 0 && source.numel() == 1);
  for (int64_t k = 0; same_slices && k < self.dim(); ++k)
    same_slices = k == d ? source.sizes[k] == n : source.sizes[k] == self.sizes[k];
  AOTISHIM_CHECK(same_slices, "index_reduce_(): Source/destination tensor must have same slice "
                 "shapes. Destination slice shape: ", shape_string(self.sizes), " at dimension ",
                 d, " and source slice shape: ", shape_string(source.sizes), " at dimension ", d,
                 ", and ", n, " indices");
  AOTISHIM_CHECK(self.dim() > 0 || n == 1, "index_reduce_(): Index should have dimension 1 or "
                 "0 (got ", n, " elements for a 0-d self)");
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, self.sizes);
  // index[i] for every position of source whose dim-coordinate is i
  Tensor scatter_index = index;
  Tensor src = source;
  if (self.dim() == 0) {
    scatter_index.sizes = {};
    scatter_index.strides = {};
    src.sizes = {};
    src.strides = {};
  } else {
    scatter_index.sizes = source.sizes;
    scatter_index.strides.assign(source.sizes.size(), 0);
    scatter_index.strides[d] = index.dim() == 0 ? 0 : index.strides[0];
  }
  scatter_into("index_reduce", out, self, d, scatter_index, &src, src, args, false);
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
