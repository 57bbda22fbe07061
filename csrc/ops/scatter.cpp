// scatter.src_out and scatter.value_out: scatter_reduce's validation and
// kernel with a plain write (the last write in index order wins where
// indices repeat, as torch's CPU kernel writes them), int64 or int32 indices as
// torch takes; the value form writes self's dtype's conversion of value.
#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "ops/fallback_ops.h"
#include "ops/pointwise_scalar.h"
#include "ops/scatter_reduce.h"

namespace aotishim {
namespace ops {

void scatter_src_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
                     int64_t dim, AtenTensorHandle index_h, AtenTensorHandle src_h) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto index_p = call.tensor(index_h, "index"), src_p = call.tensor(src_h, "src");
  ScatterReduceArgs args;
  args.reduce = ScatterReduce::Assign;
  scatter_into("scatter", *out_p, *self_p, dim, *index_p, src_p.get(), *src_p, args, false);
}

void scatter_value_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
                       int64_t dim, AtenTensorHandle index_h, double value) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto index_p = call.tensor(index_h, "index");
  const Tensor& self = *self_p;
  check_scalar_fits(value, self.dtype);
  const Tensor v = broadcast_to(scalar_in_dtype(self.device(), value, self.dtype),
                                index_p->sizes);
  ScatterReduceArgs args;
  args.reduce = ScatterReduce::Assign;
  scatter_into("scatter", *out_p, self, dim, *index_p, nullptr, v, args, false);
}

}  // namespace ops
}  // namespace aotishim
