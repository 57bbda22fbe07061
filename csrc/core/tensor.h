// The object behind an AtenTensorHandle: a strided view of a storage.
// Views share the storage; they never make a second buffer over its memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/export.h"
#include "core/device_type.h"
#include "core/dtype.h"
#include "core/storage.h"

namespace aotishim {

class Device;

struct Tensor {
  std::shared_ptr<Storage> storage;
  int64_t storage_offset = 0;  // in elements
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
  DType dtype = DType::Float32;
  uint64_t scope = 0;  // set by the handle registry
  // False for aoti_torch_new_uninitialized_tensor's placeholder (an empty
  // cpu tensor until the proxy executor assigns an op's result to it).
  bool defined = true;

  Device& device() const { return storage->device(); }
  size_t itemsize() const { return element_size(dtype); }
  int64_t dim() const { return static_cast<int64_t>(sizes.size()); }
  AOTISHIM_API int64_t numel() const;
  // storage data + storage_offset * itemsize (what aoti_torch_get_data_ptr returns)
  AOTISHIM_API char* data() const;
  size_t byte_offset() const { return static_cast<size_t>(storage_offset) * itemsize(); }
  AOTISHIM_API bool is_contiguous() const;
  // Every element at its own address with no gaps, in some dimension order
  // (a dense permutation, e.g. a transpose of a contiguous tensor).
  bool is_non_overlapping_and_dense() const;
  // Bytes from data() to one past the last element reachable (0 if numel == 0).
  AOTISHIM_API size_t extent_bytes() const;
};

AOTISHIM_API std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes);

// "[2, 3]": sizes or strides in error messages.
AOTISHIM_API std::string shape_string(const std::vector<int64_t>& dims);

// Validates sizes/strides (non-negative, no overflow) and returns the extent in
// elements: 1 + sum((size-1)*stride), or 0 for an empty tensor.
int64_t checked_extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides);

// Reads ndim/sizes/strides from C arrays with validation; null strides means
// contiguous. Returns the extent in elements (as checked_extent).
int64_t read_shape(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                   std::vector<int64_t>& sizes, std::vector<int64_t>& strides);

// A tensor over memory it must never free (a constants blob, a caller's
// array): shape read and validated as read_shape does, the storage spanning
// exactly [data, data + (storage_offset + extent) * itemsize), every size
// computed with overflow checks. Borrowed memory is never registered by
// address: two tensors may borrow the same bytes, and a freed-and-reused
// address carries no history. keepalive is released when the storage dies.
Tensor borrowed_tensor(Device& device, void* data, int64_t ndim, const int64_t* sizes,
                       const int64_t* strides, DType dtype, int64_t storage_offset = 0,
                       std::shared_ptr<void> keepalive = nullptr);

// Throws unless the view lies inside its storage.
void check_in_bounds(const Tensor& t);

// A view of `base`'s storage with other geometry (bounds-checked).
AOTISHIM_API Tensor make_view(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t storage_offset);

// A fresh contiguous tensor on `device`.
AOTISHIM_API Tensor make_empty(Device& device, DType dtype, std::vector<int64_t> sizes,
                  std::vector<int64_t> strides = {});

// Do the byte ranges that two tensors can reach intersect?
bool may_overlap(const Tensor& a, const Tensor& b);

// Throws unless every element of `t` lies at its own address, so writing it
// gives one result whatever the order of writes (a zero stride or
// interleaved dimensions would make the last write win). Accepts every
// layout whose dimensions, sorted by stride, each step past all that the
// smaller ones reach: dense and padded layouts in any permutation. `what`
// names the tensor in the message.
void check_writable_without_overlap(const Tensor& t, const char* what);

}  // namespace aotishim
