// scatter_reduce validation: torch's shape and dtype rules, out aliasing self
// (in place) or overlapping an input (worked in a temporary, copied back).
#include "ops/scatter_reduce.h"

#include <cstring>
#include <string>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

ScatterReduce parse_reduce(const char* reduce) {
  const std::string r = reduce == nullptr ? "" : reduce;
  if (r == "sum") return ScatterReduce::Sum;
  if (r == "prod") return ScatterReduce::Prod;
  if (r == "mean") return ScatterReduce::Mean;
  if (r == "amax") return ScatterReduce::Amax;
  if (r == "amin") return ScatterReduce::Amin;
  fail(str("reduce argument must be either sum, prod, mean, amax or amin, got ", r));
}

bool same_view(const Tensor& x, const Tensor& y) {
  return x.data() == y.data() && x.dtype == y.dtype && x.sizes == y.sizes &&
         x.strides == y.strides;
}

}  // namespace

namespace ops {

Op<void(const ScatterReduceArgs&)> scatter_reduce_kernel("scatter_reduce");

void scatter_into(const char* what, const Tensor& out, const Tensor& self, int64_t dim,
                  const Tensor& index, const Tensor* src, const Tensor& value_src,
                  ScatterReduceArgs args, bool index_int64_only) {
  const Tensor& source = src ? *src : value_src;
  for (const Tensor* t : {&self, &index, &source})
    AOTISHIM_CHECK(&t->device() == &out.device(), what, ": tensors are on different devices (",
                   out.device().name(), " and ", t->device().name(), ")");
  args.dim = wrap_dim(dim, self.dim(), what);
  if (index_int64_only) {
    AOTISHIM_CHECK(index.dtype == DType::Int64, what, "(): Expected dtype int64 for index");
  } else {
    AOTISHIM_CHECK(index.dtype == DType::Int64 || index.dtype == DType::Int32,
                   what, "(): Expected dtype int32/int64 for index, got ", dtype_name(index.dtype));
  }
  AOTISHIM_CHECK(source.dtype == self.dtype,
                 "scatter(): Expected self.dtype to be equal to src.dtype");
  AOTISHIM_CHECK(out.dtype == self.dtype, what, ": out is ", dtype_name(out.dtype),
                 " but self is ", dtype_name(self.dtype));
  AOTISHIM_CHECK(args.reduce == ScatterReduce::Assign || self.dtype != DType::Bool,
                 what, ": bool tensors are not supported");
  AOTISHIM_CHECK(!is_complex(self.dtype), what, ": complex tensors are not supported");
  AOTISHIM_CHECK(out.sizes == self.sizes, what, ": out has sizes ", shape_string(out.sizes),
                 " but self has sizes ", shape_string(self.sizes));
  if (index.numel() > 0) {
    AOTISHIM_CHECK(index.dim() == self.dim(),
                   "Index tensor must have the same number of dimensions as self tensor");
    if (src) {
      AOTISHIM_CHECK(index.dim() == src->dim(),
                     "Index tensor must have the same number of dimensions as src tensor");
    }
    bool fits = true;
    for (int64_t d = 0; d < index.dim(); ++d) {
      if (src && index.sizes[d] > src->sizes[d]) fits = false;
      if (d != args.dim && index.sizes[d] > self.sizes[d]) fits = false;
    }
    if (src) {
      AOTISHIM_CHECK(fits, "Expected index ", shape_string(index.sizes),
                     " to be no larger than self ", shape_string(self.sizes),
                     " apart from dimension ", args.dim, " and to be no larger size than src ",
                     shape_string(src->sizes));
    } else {
      AOTISHIM_CHECK(fits, "Expected index ", shape_string(index.sizes),
                     " to be no larger than self ", shape_string(self.sizes),
                     " apart from dimension ", args.dim);
    }
  }

  Device& device = out.device();
  const bool in_place = same_view(out, self);
  const bool via_temp = may_overlap(out, index) || may_overlap(out, source) ||
                        (!in_place && may_overlap(out, self));
  Tensor target = via_temp ? make_empty(device, out.dtype, out.sizes) : out;
  if (!(in_place && !via_temp)) device.copy(target, self);
  if (index.numel() > 0) {
    args.out = target;
    args.index = index;
    args.src = source;
    scatter_reduce_kernel.run(device, args);
  }
  if (via_temp) device.copy(out, target);
}

void scatter_reduce_two_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
                            int64_t dim, AtenTensorHandle index_h, AtenTensorHandle src_h,
                            const char* reduce, int32_t include_self) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto index_p = call.tensor(index_h, "index"), src_p = call.tensor(src_h, "src");
  ScatterReduceArgs args;
  args.reduce = parse_reduce(reduce);
  args.include_self = include_self != 0;
  scatter_into("scatter_reduce", *out_p, *self_p, dim, *index_p, src_p.get(), *src_p, args, false);
}

}  // namespace ops
}  // namespace aotishim
