// cat validation with torch's rules: the inputs' promoted dtype, legacy
// empty 1-D tensors ([0]) skipped, sizes equal outside dim, the output
// channels-last only when every input suggests one format. Each input is
// copied (converted to the result dtype) into its slice of the output
// through the device's copy, so every device with copies runs it.
#include <optional>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/dims.h"
#include "ops/fallback_ops.h"
#include "ops/memory_format.h"
#include "ops/promotion.h"

namespace aotishim {
namespace ops {

void cat(const OpCall& call, const AtenTensorHandle* tensors, int64_t tensors_len_, int64_t dim,
         AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  AOTISHIM_CHECK(tensors_len_ >= 0 && (tensors_len_ == 0 || tensors != nullptr),
                 "cat: tensors is null");
  AOTISHIM_CHECK(tensors_len_ > 0, "torch.cat(): expected a non-empty list of Tensors");
  std::vector<std::shared_ptr<Tensor>> held;
  std::vector<const Tensor*> inputs;
  for (int64_t i = 0; i < tensors_len_; ++i) {
    held.push_back(call.tensor(tensors[i], "tensors"));
    inputs.push_back(held.back().get());
  }
  Device& device = inputs[0]->device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    AOTISHIM_CHECK(&inputs[i]->device() == &device,
                   "Expected all tensors to be on the same device, but found at least two "
                   "devices, ", device.name(), " and ", inputs[i]->device().name(), "!");
    AOTISHIM_CHECK(inputs[i]->dim() > 0, "zero-dimensional tensor (at position ", i,
                   ") cannot be concatenated");
  }
  const DType result = promoted_type(inputs);
  // torch skips 1-D empty tensors, whatever dim says (older releases' way of
  // starting a concatenation).
  auto skipped = [](const Tensor* t) { return t->dim() == 1 && t->sizes[0] == 0; };
  const Tensor* ref = nullptr;
  for (const Tensor* t : inputs)
    if (!skipped(t)) {
      ref = t;
      break;
    }
  if (ref == nullptr) {  // nothing but legacy empties
    *ret0 = register_tensor(make_empty(device, result, {0}));
    return;
  }
  const int64_t d = wrap_dim(dim, ref->dim(), "cat");
  std::vector<int64_t> sizes = ref->sizes;
  sizes[d] = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = *inputs[i];
    if (skipped(&t)) continue;
    AOTISHIM_CHECK(t.dim() == ref->dim(), "Tensors must have same number of dimensions: got ",
                   ref->dim(), " and ", t.dim());
    for (int64_t k = 0; k < t.dim(); ++k) {
      if (k == d) continue;
      AOTISHIM_CHECK(t.sizes[k] == ref->sizes[k], "Sizes of tensors must match except in "
                     "dimension ", d, ". Expected size ", ref->sizes[k], " but got size ",
                     t.sizes[k], " for tensor number ", i, " in the list.");
    }
    sizes[d] += t.sizes[d];
  }
  std::optional<MemoryFormat> format;
  for (const Tensor* t : inputs) {
    const MemoryFormat f = suggest_memory_format(*t);
    if (f == MemoryFormat::Contiguous || (format && *format != f)) {
      format = MemoryFormat::Contiguous;
      break;
    }
    format = f;
  }
  Tensor out = make_empty(device, result, sizes, strides_for(sizes, *format));
  int64_t at = 0;
  for (const Tensor* t : inputs) {
    if (skipped(t) || t->numel() == 0) {
      if (!skipped(t)) at += t->sizes[d];
      continue;
    }
    std::vector<int64_t> slice_sizes = out.sizes;
    slice_sizes[d] = t->sizes[d];
    const Tensor slice = make_view(out, slice_sizes, out.strides,
                                   out.storage_offset + at * out.strides[d]);
    copy_tensor(slice, *t);
    at += t->sizes[d];
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
