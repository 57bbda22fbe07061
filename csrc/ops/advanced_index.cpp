// index.Tensor and masked_scatter validation with torch's rules: masks
// become the integer indices of their true elements (nonzero's kernel), the
// indices broadcast together, and their dims go where torch puts them (in
// place when the indexed dims are adjacent, else first); outputs are laid
// out as TensorIterator lays them out.
#include "ops/advanced_index.h"

#include <algorithm>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/nonzero.h"
#include "ops/tensor_iterator.h"

namespace aotishim {
namespace {

std::vector<int64_t> broadcast_all(const std::vector<Tensor>& ts) {
  std::vector<int64_t> shape;
  for (const Tensor& t : ts) {
    const size_t n = std::max(shape.size(), t.sizes.size());
    std::vector<int64_t> out(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t a = i < n - shape.size() ? 1 : shape[i - (n - shape.size())];
      const int64_t b = i < n - t.sizes.size() ? 1 : t.sizes[i - (n - t.sizes.size())];
      AOTISHIM_CHECK(a == b || a == 1 || b == 1, "shape mismatch: indexing tensors could not be "
                     "broadcast together with shapes ", shape_string(shape), ", ",
                     shape_string(t.sizes));
      out[i] = a == 1 ? b : a;
    }
    shape = out;
  }
  return shape;
}

}  // namespace

namespace ops {

Op<void(const IndexArgs&)> index_kernel("index");
Op<void(const MaskedScatterArgs&)> masked_scatter_kernel("masked_scatter");

IndexPlan plan_index(const OpCall& call, const Tensor& self, const AtenTensorHandle** indices_h,
                     int64_t indices_len) {
  Device& device = self.device();
  AOTISHIM_CHECK(indices_len >= 0 && (indices_len == 0 || indices_h != nullptr),
                 "index: indices is null");
  // Every index as integer indices of one self dim (a mask of k dims gives k).
  std::vector<Tensor> idx;
  std::vector<int64_t> dims;
  int64_t d = 0;
  for (int64_t i = 0; i < indices_len; ++i) {
    const AtenTensorHandle* slot = indices_h[i];
    if (slot == nullptr || *slot == nullptr) {  // None: this dim is taken whole
      ++d;
      continue;
    }
    auto t_p = call.tensor(*slot, "indices");
    const Tensor& t = *t_p;
    AOTISHIM_CHECK(&t.device() == &device, "index: indices are on ", t.device().name(),
                   " but self is on ", device.name());
    if (t.dtype == DType::Bool || t.dtype == DType::UInt8) {
      AOTISHIM_CHECK(d + t.dim() <= self.dim(), "too many indices for tensor of dimension ",
                     self.dim());
      for (int64_t j = 0; j < t.dim(); ++j)
        AOTISHIM_CHECK(t.sizes[j] == self.sizes[d + j], "The shape of the mask ",
                       shape_string(t.sizes), " at index ", j,
                       " does not match the shape of the indexed tensor ",
                       shape_string(self.sizes), " at index ", d + j);
      NonzeroArgs nz;
      nz.self = t;
      nonzero_kernel.run(device, nz);
      AOTISHIM_CHECK(nz.out.storage != nullptr, "index: no nonzero result");
      for (int64_t j = 0; j < t.dim(); ++j) {  // column j of nonzero's (n, k)
        idx.push_back(make_view(nz.out, {nz.out.sizes[0]}, {nz.out.strides[0]},
                                nz.out.storage_offset + j * nz.out.strides[1]));
        dims.push_back(d + j);
      }
      d += t.dim();
      continue;
    }
    AOTISHIM_CHECK(t.dtype == DType::Int64 || t.dtype == DType::Int32,
                   "tensors used as indices must be long, int, byte or bool tensors");
    AOTISHIM_CHECK(d < self.dim(), "too many indices for tensor of dimension ",
                   self.dim(), " (got ", indices_len, ")");
    idx.push_back(t);
    dims.push_back(d++);
  }
  AOTISHIM_CHECK(d <= self.dim(), "too many indices for tensor of dimension ", self.dim(),
                 " (got ", d, ")");
  AOTISHIM_CHECK(!idx.empty(), "index: at least one index must be a tensor");

  const std::vector<int64_t> bshape = broadcast_all(idx);
  const bool adjacent = [&] {
    for (size_t k = 1; k < dims.size(); ++k)
      if (dims[k] != dims[k - 1] + 1) return false;
    return true;
  }();
  // Result dims: the untouched self dims before the indexed ones (none when
  // they are not adjacent), the broadcast index dims, the rest.
  const int64_t at = adjacent ? dims.front() : 0;
  const int64_t nb = static_cast<int64_t>(bshape.size());
  IndexPlan plan;
  plan.dims = dims;
  for (int64_t s = 0, placed = 0; s <= self.dim(); ++s) {
    if (!placed && (s == at || s == self.dim())) {
      for (int64_t b = 0; b < nb; ++b) {
        plan.sizes.push_back(bshape[b]);
        plan.self_strides.push_back(0);
      }
      placed = 1;
    }
    if (s == self.dim()) break;
    if (std::find(dims.begin(), dims.end(), s) != dims.end()) continue;
    plan.sizes.push_back(self.sizes[s]);
    plan.self_strides.push_back(self.strides[s]);
  }
  for (const Tensor& t : idx) {  // each index at the result's sizes
    Tensor v = t;
    const std::vector<int64_t> b = broadcast_strides(t, bshape);
    v.sizes = plan.sizes;
    v.strides.assign(plan.sizes.size(), 0);
    std::copy(b.begin(), b.end(), v.strides.begin() + at);
    plan.indices.push_back(v);
  }
  return plan;
}

void index_Tensor(const OpCall& call, AtenTensorHandle self_h, const AtenTensorHandle** indices_h,
                  int64_t indices_len, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  Device& device = self.device();
  IndexPlan plan = plan_index(call, self, indices_h, indices_len);
  IndexArgs args;
  args.self = self;
  args.self_strides = plan.self_strides;
  args.dims = plan.dims;
  args.indices = plan.indices;
  // The operands as TensorIterator sees them: self restrided to the output,
  // then each index at the output's sizes.
  Tensor restrided = self;
  restrided.sizes = plan.sizes;
  restrided.strides = plan.self_strides;
  std::vector<const Tensor*> operands{&restrided};
  for (const Tensor& t : args.indices) operands.push_back(&t);
  args.out = make_empty(device, self.dtype, plan.sizes, output_strides(operands, plan.sizes));
  if (args.out.numel() > 0) index_kernel.run(device, args);
  *ret0 = register_tensor(args.out);
}

void masked_scatter(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mask_h,
                    AtenTensorHandle source_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  auto mask_p = call.tensor(mask_h, "mask");
  auto source_p = call.tensor(source_h, "source");
  const Tensor &self = *self_p, &mask = *mask_p, &source = *source_p;
  AOTISHIM_CHECK(mask.dtype == DType::Bool, "masked_scatter_: expected BoolTensor for mask");
  AOTISHIM_CHECK(source.dtype == self.dtype, "masked_scatter_: expected self and source to have "
                 "same dtypes but got ", dtype_name(self.dtype), " and ", dtype_name(source.dtype));
  AOTISHIM_CHECK(&mask.device() == &self.device() && &source.device() == &self.device(),
                 "masked_scatter: self, mask and source must be on one device");
  const std::vector<int64_t> shape = broadcast_all({self, mask});
  MaskedScatterArgs args;
  args.self = broadcast_to(self, shape);
  args.mask = broadcast_to(mask, shape);
  args.source = source;
  args.out = make_empty(self.device(), self.dtype, shape);
  if (args.out.numel() > 0) masked_scatter_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
