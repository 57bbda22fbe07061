// histogram validation with torch's rules: float32 or float64 input, weight
// of its dtype and shape (the points' shape for histogramdd), positive bin
// counts, two range values per dim. The edges depend on the data, so the
// kernel settles them.
#include "ops/histogram.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/promotion.h"

namespace aotishim {
namespace ops {

Op<void(const HistogramArgs&)> histogram_kernel("histogram");

namespace {

HistogramArgs prepare(const OpCall& call, const Tensor& self, std::vector<int64_t> bins,
                      const double** range, int64_t range_len, const Tensor* weight,
                      bool density, bool dd) {
  AOTISHIM_CHECK(self.dtype == DType::Float32 || self.dtype == DType::Float64,
                 "\"histogram_cpu\" not implemented for '", c10_name(self.dtype), "'");
  const int64_t D = static_cast<int64_t>(bins.size());
  if (dd) {
    AOTISHIM_CHECK(self.dim() >= 2, "torch.histogramdd: input tensor should have at least 2 "
                   "dimensions, but got ", self.dim());
    AOTISHIM_CHECK(self.sizes.back() == D, "torch.histogramdd: expected input to have shape "
                   "(M, N) where N is the number of bins (", D, "), but got input of shape ",
                   shape_string(self.sizes));
  }
  for (int64_t d = 0; d < D; ++d)
    AOTISHIM_CHECK(bins[d] > 0, "torch.histogramdd(): bins must be > 0, but got ", bins[d],
                   " for dimension ", d);
  HistogramArgs args;
  args.self = self;
  args.bins = bins;
  args.density = density;
  if (range != nullptr) {
    AOTISHIM_CHECK(range_len == 2 * D, "torch.histogramdd: for a ", D, "-dimensional histogram "
                   "range should have ", 2 * D, " elements, but got ", range_len);
    AOTISHIM_CHECK(range_len == 0 || *range != nullptr, call.op, ": range is null");
    args.range.assign(*range, *range + range_len);
  }
  if (weight != nullptr) {
    AOTISHIM_CHECK(weight->dtype == self.dtype, "torch.histogramdd: if weight tensor is "
                   "provided, it should have the same dtype as the input tensor");
    std::vector<int64_t> expected = self.sizes;
    if (dd) expected.pop_back();
    AOTISHIM_CHECK(weight->sizes == expected, "torch.histogramdd: if weight tensor is provided "
                   "it should have the same shape as the input tensor excluding its innermost "
                   "dimension, but got input with shape ", shape_string(self.sizes),
                   " and weight with shape ", shape_string(weight->sizes));
    AOTISHIM_CHECK(&weight->device() == &self.device(), call.op,
                   ": weight is on another device than self");
    args.weight = *weight;
  }
  args.hist = make_empty(self.device(), self.dtype, bins);
  for (int64_t d = 0; d < D; ++d)
    args.edges.push_back(make_empty(self.device(), self.dtype, {bins[d] + 1}));
  return args;
}

}  // namespace

void histogram_bin_ct(const OpCall& call, AtenTensorHandle self_h, int64_t bins,
                      const double** range, int64_t range_len_, AtenTensorHandle* weight_h,
                      int32_t density, AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto self = call.tensor(self_h, "self");
  auto weight = weight_h ? call.optional_tensor(*weight_h, "weight") : nullptr;
  AOTISHIM_CHECK(range == nullptr || range_len_ == 2, "torch.histogram: range should have 2 "
                 "elements, but got ", range_len_);
  HistogramArgs args = prepare(call, *self, {bins}, range, range_len_, weight.get(),
                               density != 0, false);
  histogram_kernel.run(self->device(), args);
  *ret0 = register_tensor(args.hist);
  *ret1 = register_tensor(args.edges[0]);
}

void _histogramdd_from_bin_cts(const OpCall& call, AtenTensorHandle self_h, const int64_t* bins,
                               int64_t bins_len_, const double** range, int64_t range_len_,
                               AtenTensorHandle* weight_h, int32_t density,
                               AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  auto weight = weight_h ? call.optional_tensor(*weight_h, "weight") : nullptr;
  AOTISHIM_CHECK(bins_len_ > 0 && bins != nullptr, call.op, ": bins must not be empty");
  HistogramArgs args = prepare(call, *self, std::vector<int64_t>(bins, bins + bins_len_), range,
                               range_len_, weight.get(), density != 0, true);
  histogram_kernel.run(self->device(), args);
  *ret0 = register_tensor(args.hist);
}

}  // namespace ops
}  // namespace aotishim
