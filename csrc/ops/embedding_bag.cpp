// _embedding_bag and _embedding_bag_forward_only validation, and the shapes
// of the four outputs as torch's CPU kernels give them. Those depend on more
// than the arguments: in sum mode torch's fast path (float32, float16 or
// bfloat16 weight with unit-stride rows, unit-stride per-sample weights, no
// padding index) returns an empty offset2bag, and the forward-only variant
// sizes sum mode's bag_size / max_indices by the offsets rather than the
// bags. The offsets' values (which need the data) are checked by the kernel.
#include "ops/embedding_bag.h"

#include <algorithm>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const EmbeddingBagArgs&)> embedding_bag_kernel("_embedding_bag");

namespace {

void embedding_bag_common(const OpCall& call, bool forward_only, AtenTensorHandle weight_h,
                          AtenTensorHandle indices_h, AtenTensorHandle offsets_h, int64_t mode,
                          AtenTensorHandle* per_sample_weights_h, int32_t include_last_offset,
                          int64_t padding_idx, AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                          AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  for (AtenTensorHandle* r : {ret0, ret1, ret2, ret3}) require_out(r, "ret");
  auto weight_p = call.tensor(weight_h, "weight"), indices_p = call.tensor(indices_h, "indices");
  auto offsets_p = call.tensor(offsets_h, "offsets");
  auto psw_p = call.optional_tensor(
      per_sample_weights_h == nullptr ? nullptr : *per_sample_weights_h, "per_sample_weights");
  const Tensor &weight = *weight_p, &indices = *indices_p, &offsets = *offsets_p;
  Device& device = weight.device();
  for (const Tensor* t : {&indices, &offsets, static_cast<const Tensor*>(psw_p.get())})
    AOTISHIM_CHECK(t == nullptr || &t->device() == &device, call.op,
                   ": tensors are on different devices (", device.name(), " and ",
                   t->device().name(), ")");
  AOTISHIM_CHECK(is_floating(weight.dtype), call.op,
                 ": weight must be float32, float64, bfloat16 or float16, got ",
                 dtype_name(weight.dtype));
  AOTISHIM_CHECK(weight.dim() == 2, call.op, ": weight must be 2-D, got sizes ",
                 shape_string(weight.sizes));
  for (const Tensor* t : {&indices, &offsets}) {
    AOTISHIM_CHECK(t->dtype == DType::Int64 || t->dtype == DType::Int32, call.op,
                   ": indices and offsets must be int32 or int64, got ", dtype_name(t->dtype));
    AOTISHIM_CHECK(t->dim() == 1, call.op,
                   ": indices and offsets must be 1-D (flatten 2-D input into bags first), "
                   "got sizes ", shape_string(t->sizes));
  }
  AOTISHIM_CHECK(mode >= 0 && mode <= 2, call.op, ": mode must be 0 (sum), 1 (mean) or 2 (max), got ",
                 mode);
  if (psw_p) {
    AOTISHIM_CHECK(mode == 0, call.op, ": per_sample_weights only supported with mode='sum'");
    AOTISHIM_CHECK(psw_p->dtype == weight.dtype, call.op,
                   ": per_sample_weights must have weight's dtype (", dtype_name(weight.dtype),
                   "), got ", dtype_name(psw_p->dtype));
    AOTISHIM_CHECK(psw_p->dim() == 1 && psw_p->sizes[0] == indices.sizes[0], call.op,
                   ": per_sample_weights must be 1-D with one weight per index (",
                   indices.sizes[0], "), got sizes ", shape_string(psw_p->sizes));
  }

  EmbeddingBagArgs a;
  a.weight = weight;
  a.indices = indices;
  a.offsets = offsets;
  a.has_per_sample_weights = psw_p != nullptr;
  if (psw_p) a.per_sample_weights = *psw_p;
  a.mode = mode;
  a.padding_idx = padding_idx;
  const int64_t n_offsets = offsets.sizes[0], n = indices.sizes[0], D = weight.sizes[1];
  a.bags = include_last_offset != 0 ? std::max<int64_t>(n_offsets - 1, 0) : n_offsets;
  // The auxiliary outputs' integer type: int64 unless both are int32.
  const DType index_dtype = indices.dtype == DType::Int32 && offsets.dtype == DType::Int32
                                ? DType::Int32
                                : DType::Int64;
  const bool fast_sum = mode == 0 && padding_idx < 0 &&
                        (weight.dtype == DType::Float32 || weight.dtype == DType::Float16 ||
                         weight.dtype == DType::BFloat16) &&
                        weight.strides[1] == 1 &&
                        (!psw_p || psw_p->strides[0] == 1);
  const int64_t sum_aux = forward_only ? n_offsets : a.bags;
  a.output = make_empty(device, weight.dtype, {a.bags, D});
  if (device.type() == DeviceType::CUDA) {
    // torch's cuda kernel: offset2bag always, bag_size per offset, no
    // max_indices outside max mode.
    a.offset2bag = make_empty(device, index_dtype, {n});
    a.bag_size = make_empty(device, index_dtype, {n_offsets});
    a.max_indices = make_empty(device, index_dtype,
                               mode == 2 ? std::vector<int64_t>{a.bags, D} : std::vector<int64_t>{0});
  } else {
    a.offset2bag = make_empty(device, index_dtype, {fast_sum ? 0 : n});
    a.bag_size = make_empty(device, index_dtype, {mode == 0 ? sum_aux : a.bags});
    a.max_indices = make_empty(device, index_dtype,
                               mode == 2 ? std::vector<int64_t>{a.bags, D}
                                         : std::vector<int64_t>{mode == 0 ? sum_aux : a.bags});
  }
  embedding_bag_kernel.run(device, a);
  *ret0 = register_tensor(a.output);
  *ret1 = register_tensor(a.offset2bag);
  *ret2 = register_tensor(a.bag_size);
  *ret3 = register_tensor(a.max_indices);
}

}  // namespace

void _embedding_bag(const OpCall& call, AtenTensorHandle weight, AtenTensorHandle indices,
                    AtenTensorHandle offsets, int32_t /*scale_grad_by_freq*/, int64_t mode,
                    int32_t /*sparse*/, AtenTensorHandle* per_sample_weights,
                    int32_t include_last_offset, int64_t padding_idx, AtenTensorHandle* ret0,
                    AtenTensorHandle* ret1, AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  embedding_bag_common(call, false, weight, indices, offsets, mode, per_sample_weights,
                       include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

// The same forward; scale_grad_by_freq and sparse only shape the backward.
void _embedding_bag_forward_only(const OpCall& call, AtenTensorHandle weight,
                                 AtenTensorHandle indices, AtenTensorHandle offsets,
                                 int32_t /*scale_grad_by_freq*/, int64_t mode, int32_t /*sparse*/,
                                 AtenTensorHandle* per_sample_weights,
                                 int32_t include_last_offset, int64_t padding_idx,
                                 AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                 AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  embedding_bag_common(call, true, weight, indices, offsets, mode, per_sample_weights,
                       include_last_offset, padding_idx, ret0, ret1, ret2, ret3);
}

}  // namespace ops
}  // namespace aotishim
