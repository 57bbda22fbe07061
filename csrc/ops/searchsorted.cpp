// searchsorted validation with torch's rules and messages: side and right
// must agree, the sequence is 1-D or matches self's leading dims, a sorter is
// int64 of the sequence's sizes; mixed dtypes are compared in their promoted
// dtype (converted through the device's copy). searchsorted_Scalar and
// bucketize_Tensor are the same search.
#include "ops/searchsorted.h"

#include <cstring>
#include <string>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

int rank_of(DType d) {  // within one kind, wider dtypes rank higher
  switch (d) {
    case DType::Bool: return 0;
    case DType::UInt8: case DType::Int8: return 1;
    case DType::Int16: return 2;
    case DType::Int32: return 3;
    case DType::Int64: return 4;
    case DType::Float16: case DType::BFloat16: return 5;
    case DType::Float32: return 6;
    case DType::Float64: return 7;
    default: return -1;  // refused before promotion
  }
}

// torch's type promotion for two tensors of the same rank (dims).
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (rank_of(a) == rank_of(b)) {
    // bfloat16 with float16 meet in float32; uint8 with int8 in int16.
    return is_floating(a) ? DType::Float32 : DType::Int16;
  }
  return rank_of(a) > rank_of(b) ? a : b;
}

Tensor as_dtype(const Tensor& t, DType dtype) {
  if (t.dtype == dtype) return t;
  Tensor converted = make_empty(t.device(), dtype, t.sizes);
  copy_tensor(converted, t);
  return converted;
}

}  // namespace

namespace ops {

Op<void(const SearchsortedArgs&)> searchsorted_kernel("searchsorted");

namespace {

// The search itself; `scalar`: self is a number the caller passed (a 0-d
// float64 here), promoted as torch promotes a wrapped number.
void search(const OpCall& call, const Tensor& seq, const Tensor& self, bool scalar,
            int32_t out_int32, int32_t right, const char** side, AtenTensorHandle* sorter_h,
            AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto sorter_p = sorter_h == nullptr ? nullptr : call.optional_tensor(*sorter_h, "sorter");
  AOTISHIM_CHECK(&seq.device() == &self.device(), "searchsorted: sorted_sequence is on ",
                 seq.device().name(), " but self is on ", self.device().name());

  bool use_right = right != 0;
  if (side != nullptr && *side != nullptr) {
    const std::string s = *side;
    AOTISHIM_CHECK(s == "left" || s == "right",
                   "torch.searchsorted(): side can only be 'left' or 'right' but got ", s);
    AOTISHIM_CHECK(!(s == "left" && use_right),
                   "torch.searchsorted(): side and right can't be set to opposites, got side of "
                   "left while right was True");
    use_right = s == "right";
  }

  AOTISHIM_CHECK(seq.dim() > 0,
                 "torch.searchsorted(): boundaries tensor should have positive dimension, but "
                 "got 0 dimension");
  if (seq.dim() > 1) {
    AOTISHIM_CHECK(self.dim() > 0,
                   "torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                   "dimension is 1, but we got boundaries tensor dim(", seq.dim(),
                   ") and input value's dim(0) numel(", self.numel(), ")");
    const bool leading_match =
        seq.dim() == self.dim() &&
        std::equal(seq.sizes.begin(), seq.sizes.end() - 1, self.sizes.begin());
    AOTISHIM_CHECK(leading_match,
                   "torch.searchsorted(): boundaries tensor should be 1 dimension or the first "
                   "N-1 dimensions of boundaries tensor and input value tensor must match, but we "
                   "got boundaries tensor ", shape_string(seq.sizes), " and input value tensor ",
                   shape_string(self.sizes));
  }
  AOTISHIM_CHECK(!out_int32 || seq.sizes.back() < (int64_t{1} << 31) - 1,
                 "torch.searchsorted(): the size of boundaries' last dimension should be less "
                 "than 2147483647, but we got ", seq.sizes.back());

  SearchsortedArgs args;
  if (sorter_p) {
    const Tensor& sorter = *sorter_p;
    AOTISHIM_CHECK(&sorter.device() == &seq.device(), "searchsorted: sorter is on ",
                   sorter.device().name(), " but sorted_sequence is on ", seq.device().name());
    AOTISHIM_CHECK(sorter.dtype == DType::Int64,
                   "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype ",
                   dtype_name(sorter.dtype));
    AOTISHIM_CHECK(sorter.sizes == seq.sizes,
                   "torch.searchsorted(): boundary and sorter must have the same size, but got "
                   "boundary tensor ", shape_string(seq.sizes), " and got sorter tensor ",
                   shape_string(sorter.sizes));
    args.has_sorter = true;
    args.sorter = sorter;
  }
  for (const Tensor* t : {&seq, &self})
    AOTISHIM_CHECK(rank_of(t->dtype) >= 0, "torch.searchsorted(): ", dtype_name(t->dtype),
                   " is not supported (bool, int8..int64, uint8 and the real floating types are)");
  // A number meets a floating sequence in its dtype, any other in float32
  // (torch's default dtype).
  const DType common = scalar ? (is_floating(seq.dtype) ? seq.dtype : DType::Float32)
                              : promote(seq.dtype, self.dtype);
  args.sequence = as_dtype(seq, common);
  args.self = as_dtype(self, common);
  args.right = use_right;
  args.out = make_empty(self.device(), out_int32 ? DType::Int32 : DType::Int64, self.sizes);
  if (args.out.numel() > 0) searchsorted_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace

void searchsorted_Tensor(const OpCall& call, AtenTensorHandle sorted_sequence_h,
                         AtenTensorHandle self_h, int32_t out_int32, int32_t right,
                         const char** side, AtenTensorHandle* sorter, AtenTensorHandle* ret0) {
  auto seq_p = call.tensor(sorted_sequence_h, "sorted_sequence");
  auto self_p = call.tensor(self_h, "self");
  search(call, *seq_p, *self_p, false, out_int32, right, side, sorter, ret0);
}

void searchsorted_Scalar(const OpCall& call, AtenTensorHandle sorted_sequence_h, double self,
                         int32_t out_int32, int32_t right, const char** side,
                         AtenTensorHandle* sorter, AtenTensorHandle* ret0) {
  auto seq_p = call.tensor(sorted_sequence_h, "sorted_sequence");
  Tensor value = make_empty(get_device(DeviceType::CPU), DType::Float64, {});
  *reinterpret_cast<double*>(value.data()) = self;
  Tensor here = make_empty(seq_p->device(), DType::Float64, {});
  copy_tensor(here, value);
  search(call, *seq_p, here, true, out_int32, right, side, sorter, ret0);
}

// bucketize(self, boundaries) is searchsorted(boundaries, self) over a 1-D
// boundaries tensor.
void bucketize_Tensor(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle boundaries_h,
                      int32_t out_int32, int32_t right, AtenTensorHandle* ret0) {
  auto self_p = call.tensor(self_h, "self");
  auto boundaries_p = call.tensor(boundaries_h, "boundaries");
  AOTISHIM_CHECK(boundaries_p->dim() == 1, "boundaries tensor must be 1 dimension, but got dim(",
                 boundaries_p->dim(), ")");
  search(call, *boundaries_p, *self_p, false, out_int32, right, nullptr, nullptr, ret0);
}

}  // namespace ops
}  // namespace aotishim
