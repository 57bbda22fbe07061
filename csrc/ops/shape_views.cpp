// Views that change a tensor's geometry: reshape (a view where torch's
// reshape gives one, else a contiguous copy), permute, slice_Tensor,
// squeeze_dim and narrow. Each returns a new handle over the same storage
// with torch's sizes, strides and offset, and torch's errors.
#include <algorithm>
#include <limits>
#include <optional>

#include "core/copy.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

namespace {

Tensor with_geometry(const Tensor& self, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                     int64_t offset) {
  Tensor view = self;
  view.sizes = std::move(sizes);
  view.strides = std::move(strides);
  view.storage_offset = offset;
  check_in_bounds(view);
  return view;
}

// Replaces a single -1 by the size that keeps numel, as torch's infer_size.
std::vector<int64_t> inferred_shape(const int64_t* shape, int64_t len, int64_t numel) {
  AOTISHIM_CHECK(len >= 0 && (len == 0 || shape != nullptr), "reshape: invalid shape argument");
  std::vector<int64_t> out(shape, shape + len);
  std::optional<size_t> infer;
  int64_t known = 1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == -1) {
      AOTISHIM_CHECK(!infer, "only one dimension can be inferred");
      infer = d;
    } else {
      AOTISHIM_CHECK(out[d] >= 0, "invalid shape dimension ", out[d]);
      AOTISHIM_CHECK(!__builtin_mul_overflow(known, out[d], &known), "reshape: shape overflows");
    }
  }
  const bool fits = numel == known || (infer && known > 0 && numel % known == 0);
  AOTISHIM_CHECK(fits, "shape '", shape_string(out), "' is invalid for input of size ", numel);
  if (infer) {
    // torch: with a zero among the known sizes, -1 is ambiguous
    AOTISHIM_CHECK(known != 0, "cannot reshape tensor of 0 elements into shape ", shape_string(out),
                   " because the unspecified dimension size -1 can be any value and is ambiguous");
    out[*infer] = numel / known;
  }
  return out;
}

// The strides of `shape` viewing `sizes`/`strides` without a copy, if there
// are any (torch's computeStride: dims merge into chunks that are contiguous
// among themselves; each chunk must split into whole new dims).
std::optional<std::vector<int64_t>> view_strides(const std::vector<int64_t>& sizes,
                                                 const std::vector<int64_t>& strides,
                                                 const std::vector<int64_t>& shape) {
  if (sizes.empty()) return std::vector<int64_t>(shape.size(), 1);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 && sizes == shape) return strides;
  std::vector<int64_t> out(shape.size());
  if (numel == 0) {
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d)
      out[d] = d == static_cast<int64_t>(shape.size()) - 1
                   ? 1
                   : std::max<int64_t>(shape[d + 1], 1) * out[d + 1];
    return out;
  }
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    const bool chunk_ends =
        d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

void reshape(const OpCall& call, AtenTensorHandle self_h, const int64_t* shape, int64_t shape_len,
             AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  std::vector<int64_t> sizes = inferred_shape(shape, shape_len, self.numel());
  if (auto strides = view_strides(self.sizes, self.strides, sizes)) {
    *ret0 = register_tensor(with_geometry(self, std::move(sizes), std::move(*strides),
                                          self.storage_offset));
    return;
  }
  // No view exists: torch copies into a contiguous tensor of the new shape.
  Tensor packed = make_empty(self.device(), self.dtype, self.sizes);
  copy_tensor(packed, self);
  *ret0 = register_tensor(with_geometry(packed, sizes, contiguous_strides(sizes), 0));
}

void permute(const OpCall& call, AtenTensorHandle self_h, const int64_t* dims, int64_t dims_len,
             AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(dims_len == self.dim(),
                 "permute(sparse_coo): number of dimensions in the tensor input does not match "
                 "the length of the desired ordering of dimensions i.e. input.dim() = ",
                 self.dim(), " is not equal to len(dims) = ", dims_len);
  std::vector<int64_t> sizes(self.sizes.size()), strides(self.sizes.size());
  std::vector<bool> seen(self.sizes.size(), false);
  for (int64_t i = 0; i < dims_len; ++i) {
    const int64_t d = wrap_dim(dims[i], self.dim(), "permute");
    AOTISHIM_CHECK(!seen[d], "permute(): duplicate dims are not allowed.");
    seen[d] = true;
    sizes[i] = self.sizes[d];
    strides[i] = self.strides[d];
  }
  *ret0 = register_tensor(with_geometry(self, std::move(sizes), std::move(strides),
                                        self.storage_offset));
}

void slice_Tensor(const OpCall& call, AtenTensorHandle self_h, int64_t dim, int64_t* start_p,
                  int64_t* end_p, int64_t step, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(self.dim() > 0, "slice() cannot be applied to a 0-dim tensor.");
  AOTISHIM_CHECK(step > 0, "slice step must be positive");
  dim = wrap_dim(dim, self.dim(), "slice");
  const int64_t size = self.sizes[dim];
  int64_t start = start_p ? *start_p : 0;
  int64_t end = end_p ? *end_p : std::numeric_limits<int64_t>::max();
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  std::vector<int64_t> sizes = self.sizes, strides = self.strides;
  sizes[dim] = (end - start + step - 1) / step;
  strides[dim] *= step;
  *ret0 = register_tensor(with_geometry(self, std::move(sizes), std::move(strides),
                                        self.storage_offset + start * self.strides[dim]));
}

void squeeze_dim(const OpCall& call, AtenTensorHandle self_h, int64_t dim, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  dim = wrap_dim(dim, self.dim(), "squeeze");
  std::vector<int64_t> sizes = self.sizes, strides = self.strides;
  if (self.dim() > 0 && sizes[dim] == 1) {
    sizes.erase(sizes.begin() + dim);
    strides.erase(strides.begin() + dim);
  }
  *ret0 = register_tensor(with_geometry(self, std::move(sizes), std::move(strides),
                                        self.storage_offset));
}

void narrow(const OpCall& call, AtenTensorHandle self_h, int64_t dim, int64_t start,
            int64_t length, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(self.dim() > 0, "narrow() cannot be applied to a 0-dim tensor.");
  AOTISHIM_CHECK(length >= 0, "narrow(): length must be non-negative.");
  dim = wrap_dim(dim, self.dim(), "narrow");
  const int64_t size = self.sizes[dim];
  AOTISHIM_CHECK(-size <= start && start <= size, "start out of range (expected to be in range of [",
                 -size, ", ", size, "], but got ", start, ")");
  if (start < 0) start += size;
  AOTISHIM_CHECK(start <= size - length, "start (", start, ") + length (", length,
                 ") exceeds dimension size (", size, ").");
  std::vector<int64_t> sizes = self.sizes;
  sizes[dim] = length;
  *ret0 = register_tensor(with_geometry(self, std::move(sizes), self.strides,
                                        self.storage_offset + start * self.strides[dim]));
}

}  // namespace ops
}  // namespace aotishim
