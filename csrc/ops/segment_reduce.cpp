// segment_reduce validation with torch's rules: a floating data tensor,
// lengths or offsets (indices are not supported, as in torch) of int32 or
// int64 whose leading dims are data's dims before the axis, one reduction of
// max, mean, min, sum or prod. Without `unsafe`, lengths must be
// non-negative and sum to the axis' size (torch's checks; the kernel checks
// them in any case, so a bad segment is an error, never a read out of
// bounds, even when unsafe). The output is packed, as torch's.
#include "ops/segment_reduce.h"

#include <string>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"
#include "ops/promotion.h"

namespace aotishim {
namespace ops {

Op<void(const SegmentReduceArgs&)> segment_reduce_kernel("segment_reduce");

void segment_reduce(const OpCall& call, AtenTensorHandle data_h, const char* reduce,
                    AtenTensorHandle* lengths_h, AtenTensorHandle* indices_h,
                    AtenTensorHandle* offsets_h, int64_t axis, int32_t unsafe, double* initial,
                    AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto data_p = call.tensor(data_h, "data");
  const Tensor& data = *data_p;
  auto lengths = lengths_h ? call.optional_tensor(*lengths_h, "lengths") : nullptr;
  auto indices = indices_h ? call.optional_tensor(*indices_h, "indices") : nullptr;
  auto offsets = offsets_h ? call.optional_tensor(*offsets_h, "offsets") : nullptr;
  const std::string r = reduce == nullptr ? "" : reduce;
  SegmentReduceArgs args;
  if (r == "max") args.reduce = SegmentReduce::Max;
  else if (r == "mean") args.reduce = SegmentReduce::Mean;
  else if (r == "min") args.reduce = SegmentReduce::Min;
  else if (r == "sum") args.reduce = SegmentReduce::Sum;
  else if (r == "prod") args.reduce = SegmentReduce::Prod;
  else fail(str("reduce argument must be either sum, prod, max, min or mean, got ", r));
  AOTISHIM_CHECK(indices == nullptr, "segment_reduce(): indices based reduction is not supported yet.");
  AOTISHIM_CHECK(lengths || offsets, "segment_reduce(): Either lengths or offsets must be defined.");
  AOTISHIM_CHECK(is_floating(data.dtype), "\"_segment_reduce_cpu\" not implemented for '",
                 c10_name(data.dtype), "'");
  const int64_t a = wrap_dim(axis, data.dim(), "segment_reduce");
  AOTISHIM_CHECK(data.dim() > 0, "segment_reduce(): data must have at least one dimension");
  const Tensor& seg = lengths ? *lengths : *offsets;
  args.offsets = lengths == nullptr;
  const char* what = args.offsets ? "offsets" : "lengths";
  AOTISHIM_CHECK(seg.dtype == DType::Int64 || seg.dtype == DType::Int32, "segment_reduce(): ",
                 what, " must be int32 or int64, got ", dtype_name(seg.dtype));
  AOTISHIM_CHECK(&seg.device() == &data.device(), "segment_reduce(): ", what,
                 " must be on the same device as data");
  AOTISHIM_CHECK(seg.dim() == a + 1, "segment_reduce(): Expected ", what, " to have ", a + 1,
                 " dimensions (data's dims before axis and one more), but got ", seg.dim());
  for (int64_t k = 0; k < a; ++k)
    AOTISHIM_CHECK(seg.sizes[k] == data.sizes[k], "segment_reduce(): Expected ", what,
                   " to match data's sizes before axis ", a, ", but got ", shape_string(seg.sizes),
                   " for data of shape ", shape_string(data.sizes));
  const int64_t n = seg.sizes[a];
  AOTISHIM_CHECK(!args.offsets || n >= 1, "segment_reduce(): offsets must hold at least one value");
  args.count = args.offsets ? n - 1 : n;
  args.axis_size = data.sizes[a];
  for (int64_t k = 0; k < a; ++k) args.outer *= data.sizes[k];
  for (int64_t k = a + 1; k < data.dim(); ++k) args.inner *= data.sizes[k];
  args.unsafe = unsafe != 0;
  if (initial) args.initial = *initial;
  args.data = data.is_contiguous() ? data : clone_contiguous(data);
  args.segments = seg.is_contiguous() ? seg : clone_contiguous(seg);
  std::vector<int64_t> sizes = data.sizes;
  sizes[a] = args.count;
  args.out = make_empty(data.device(), data.dtype, sizes);
  if (args.out.numel() > 0 || args.outer * args.count > 0) segment_reduce_kernel.run(data.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
