// cumsum / cumprod / logcumsumexp: torch's result dtype (integers and bool promote to int64
// unless a dtype is given), dimension wrapping and 0-d handling, then the
// device's cumulative kernel.
#include "ops/cumulative.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

void cumulative(const ops::OpCall& call, AtenTensorHandle self_h, int64_t dim,
                const int32_t* dtype, AtenTensorHandle* ret0, CumulativeKind kind) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  DType result = self.dtype;
  if (dtype != nullptr) {
    result = dtype_from_int(*dtype);
  } else if (!is_floating(self.dtype)) {
    result = DType::Int64;
  }
  AOTISHIM_CHECK(result != DType::Bool, call.op, ": dtype bool is not supported for the result");
  AOTISHIM_CHECK(kind != CumulativeKind::LogSumExp || is_floating(self.dtype), call.op,
                 ": ", dtype_name(self.dtype), " is not supported (the real floating types are)");
  for (DType t : {self.dtype, result})
    AOTISHIM_CHECK(!is_complex(t) && t != DType::UInt16 && t != DType::UInt32 &&
                       t != DType::UInt64,
                   call.op, ": ", dtype_name(t), " is not supported here (the real floating "
                   "types, bool, uint8 and int8..int64 are)");
  const int64_t rank = std::max<int64_t>(self.dim(), 1);
  AOTISHIM_CHECK(dim >= -rank && dim < rank, call.op, ": dimension ", dim,
                 " is out of range for a tensor of ", self.dim(), " dimension(s)");
  if (dim < 0) dim += rank;

  Tensor out = make_empty(self.device(), result, self.sizes);
  if (out.numel() > 0) {
    CumulativeArgs args;
    args.out = out;
    args.self = self;
    args.kind = kind;
    args.dim = dim;
    if (self.dim() == 0) {  // one element: the kernel sees shape [1]
      args.out = make_view(out, {1}, {1}, out.storage_offset);
      args.self = make_view(self, {1}, {1}, self.storage_offset);
    }
    ops::cumulative.run(self.device(), args);
  }
  *ret0 = register_tensor(std::move(out));
}

}  // namespace

namespace ops {

Op<void(const CumulativeArgs&)> cumulative("cumulative");

void cumsum(const OpCall& call, AtenTensorHandle self, int64_t dim, int32_t* dtype,
            AtenTensorHandle* ret0) {
  aotishim::cumulative(call, self, dim, dtype, ret0, CumulativeKind::Sum);
}

void cumprod(const OpCall& call, AtenTensorHandle self, int64_t dim, int32_t* dtype,
             AtenTensorHandle* ret0) {
  aotishim::cumulative(call, self, dim, dtype, ret0, CumulativeKind::Product);
}

void logcumsumexp(const OpCall& call, AtenTensorHandle self, int64_t dim, AtenTensorHandle* ret0) {
  aotishim::cumulative(call, self, dim, nullptr, ret0, CumulativeKind::LogSumExp);
}

}  // namespace ops
}  // namespace aotishim
