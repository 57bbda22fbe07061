// Element copies between tensors on any devices, and clones. Device work goes
// through the devices' own copy/upload/download, never a host copy of device
// memory.
#pragma once

#include "core/tensor.h"

namespace aotishim {

// dst = src, src broadcast to dst's sizes, dtype converted.
void copy_tensor(const Tensor& dst, const Tensor& src);
// copy_tensor into a destination the caller chose (aoti_torch_copy_): one
// whose elements may overlap each other is refused (check_writable_without_
// overlap; torch refuses the zero-stride case and lets the last write win in
// others, which would make the result depend on the kernel's write order).
// (Internal copies may fill such a tensor, e.g. a stride-preserving clone of
// an expanded tensor, where every write of an element carries one value.)
void copy_into(const Tensor& dst, const Tensor& src);
// A fresh contiguous tensor with src's values, on src's device.
Tensor clone_contiguous(const Tensor& src);
// torch's clone(): a dense src keeps its dimension order (strides), any
// other becomes contiguous.
Tensor clone_preserving_layout(const Tensor& src);
// A fresh tensor with src's sizes and strides (storage sized to fit).
Tensor clone_preserving_strides(const Tensor& src);
// Packed row-major bytes of src into host memory (numel * itemsize bytes).
void copy_to_host_packed(const Tensor& src, void* host_dst);
// `t` expanded to `sizes` (stride 0 on broadcast dims); throws if incompatible.
Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& sizes);

}  // namespace aotishim
